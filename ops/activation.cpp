#include "tapegrad/ops/activation.hpp"

#include <cmath>

#include "tapegrad/ops/elementwise.hpp"

namespace tg {

namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;  // √(2/π)
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;   // 1/√(2π)
constexpr double kCubic = 0.044715;

template <class F>
Tensor map(const Tensor& x, const char* op, F f) {
    need_float(x, op);
    const DType ct = compute_dtype(x.dtype());
    Tensor y = x.to(ct).clone();
    with_compute_type(ct, [&](auto tag) {
        using T = decltype(tag);
        T* p = y.data<T>();
        for (std::int64_t i = 0, n = y.numel(); i < n; ++i) p[i] = static_cast<T>(f(static_cast<double>(p[i])));
    });
    return y.to(x.dtype());
}

}  // namespace

Tensor gelu(const Tensor& x, bool tanh_approximation) {
    if (tanh_approximation)
        return map(x, "gelu", [](double v) { return 0.5 * v * (1 + std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v))); });
    return map(x, "gelu", [](double v) { return 0.5 * v * (1 + std::erf(v * kInvSqrt2)); });
}

Tensor gelu_derivative(const Tensor& x, bool tanh_approximation, int order) {
    if (order != 1 && order != 2) fail("order", "gelu_derivative: order ", order, " is not 1 or 2");
    if (tanh_approximation)
        return map(x, "gelu", [order](double v) {
            const double u = kSqrt2OverPi * (v + kCubic * v * v * v), t = std::tanh(u);
            const double du = kSqrt2OverPi * (1 + 3 * kCubic * v * v), ddu = kSqrt2OverPi * 6 * kCubic * v;
            if (order == 1) return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * du;
            return (1 - t * t) * (du - v * t * du * du + 0.5 * v * ddu);
        });
    return map(x, "gelu", [order](double v) {
        const double pdf = kInvSqrt2Pi * std::exp(-0.5 * v * v);
        if (order == 1) return 0.5 * (1 + std::erf(v * kInvSqrt2)) + v * pdf;
        return pdf * (2 - v * v);
    });
}

}  // namespace tg
