#include "ops/reduce.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ops/elementwise.hpp"

namespace tg {

namespace {

DType compute_type(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

void need_float(const Tensor& t, const char* op) {
    if (!t.defined()) fail("input", op, ": input is undefined");
    if (!is_float(t.dtype())) fail("dtype", op, ": needs a float tensor, got ", dtype_name(t.dtype()));
}

}  // namespace

std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op) {
    std::vector<int> out;
    if (axes.empty()) {
        for (int a = 0; a < ndim; ++a) out.push_back(a);
        return out;
    }
    std::vector<bool> seen(static_cast<std::size_t>(ndim), false);
    for (int a : axes) {
        const int b = a < 0 ? a + ndim : a;
        if (b < 0 || b >= ndim) fail("axis", op, ": axis ", a, " out of range for a tensor of rank ", ndim);
        if (seen[static_cast<std::size_t>(b)]) fail("axis", op, ": axis ", a, " given twice");
        seen[static_cast<std::size_t>(b)] = true;
        out.push_back(b);
    }
    std::sort(out.begin(), out.end());
    return out;
}

Tensor reduce_sum(const Tensor& x, const std::vector<int>& axes_in, bool keepdim) {
    need_float(x, "sum");
    const int nd = x.ndim();
    const std::vector<int> axes = normalize_axes(axes_in, nd, "sum");
    std::vector<bool> red(static_cast<std::size_t>(nd), false);
    for (int a : axes) red[static_cast<std::size_t>(a)] = true;
    Shape kept;  // keepdim shape
    for (int a = 0; a < nd; ++a) kept.push_back(red[static_cast<std::size_t>(a)] ? 1 : x.shape()[static_cast<std::size_t>(a)]);
    // Output strides over the input's index space: 0 on reduced axes.
    const Shape ks = contiguous_strides(kept);
    Shape os(static_cast<std::size_t>(nd));
    for (int a = 0; a < nd; ++a) os[static_cast<std::size_t>(a)] = red[static_cast<std::size_t>(a)] ? 0 : ks[static_cast<std::size_t>(a)];
    std::vector<double> acc(static_cast<std::size_t>(shape_numel(kept)), 0.0);
    const DType ct = compute_type(x.dtype());
    const Tensor X = x.to(ct).contiguous();
    auto run = [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* px = X.data<T>();
        const std::int64_t n = X.numel();
        const Shape& s = x.shape();
        std::vector<std::int64_t> idx(static_cast<std::size_t>(nd), 0);
        std::int64_t o = 0;
        for (std::int64_t k = 0; k < n; ++k) {
            acc[static_cast<std::size_t>(o)] += static_cast<double>(px[k]);
            for (int a = nd - 1; a >= 0; --a) {
                const std::size_t ua = static_cast<std::size_t>(a);
                o += os[ua];
                if (++idx[ua] < s[ua]) break;
                o -= os[ua] * s[ua];
                idx[ua] = 0;
            }
        }
    };
    if (ct == DType::f64) run(static_cast<double*>(nullptr));
    else run(static_cast<float*>(nullptr));
    Shape out_shape;
    for (int a = 0; a < nd; ++a)
        if (keepdim || !red[static_cast<std::size_t>(a)]) out_shape.push_back(kept[static_cast<std::size_t>(a)]);
    return Tensor::from(out_shape, acc, x.dtype());
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
    if (x.shape() == shape) return x;
    if (broadcast_shapes(shape, x.shape(), "sum_to") != x.shape() || shape.size() > x.shape().size())
        fail("shape", "sum_to: cannot sum ", shape_str(x.shape()), " down to ", shape_str(shape));
    const std::size_t lead = x.shape().size() - shape.size();
    std::vector<int> axes;
    for (std::size_t a = 0; a < x.shape().size(); ++a)
        if (a < lead || (shape[a - lead] == 1 && x.shape()[a] != 1)) axes.push_back(static_cast<int>(a));
    if (axes.empty()) return x.reshape(shape);
    return reduce_sum(x, axes, true).reshape(shape);
}

namespace {

// x viewed as [outer, n, inner] around `axis`; each (outer, inner) line is normalised in
// f64 after subtracting its maximum.
Tensor softmax_impl(const Tensor& x, int axis, bool log, const char* op) {
    need_float(x, op);
    const int nd = x.ndim();
    const int ax = normalize_axes({axis}, nd, op)[0];
    std::int64_t outer = 1, inner = 1;
    const std::int64_t n = x.shape()[static_cast<std::size_t>(ax)];
    for (int a = 0; a < ax; ++a) outer *= x.shape()[static_cast<std::size_t>(a)];
    for (int a = ax + 1; a < nd; ++a) inner *= x.shape()[static_cast<std::size_t>(a)];
    const DType ct = compute_type(x.dtype());
    const Tensor X = x.to(ct).contiguous();
    Tensor out = Tensor::empty(x.shape(), ct);
    auto run = [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* px = X.data<T>();
        T* po = out.data<T>();
        for (std::int64_t o = 0; o < outer; ++o)
            for (std::int64_t i = 0; i < inner; ++i) {
                const T* in = px + o * n * inner + i;
                T* res = po + o * n * inner + i;
                double m = -INFINITY;
                for (std::int64_t j = 0; j < n; ++j) m = std::max(m, static_cast<double>(in[j * inner]));
                double s = 0;
                for (std::int64_t j = 0; j < n; ++j) s += std::exp(static_cast<double>(in[j * inner]) - m);
                const double ls = std::log(s);
                for (std::int64_t j = 0; j < n; ++j) {
                    const double z = static_cast<double>(in[j * inner]) - m;
                    res[j * inner] = static_cast<T>(log ? z - ls : std::exp(z) / s);
                }
            }
    };
    if (ct == DType::f64) run(static_cast<double*>(nullptr));
    else run(static_cast<float*>(nullptr));
    return out.to(x.dtype());
}

}  // namespace

Tensor softmax(const Tensor& x, int axis) { return softmax_impl(x, axis, false, "softmax"); }
Tensor log_softmax(const Tensor& x, int axis) { return softmax_impl(x, axis, true, "log_softmax"); }

}  // namespace tg
