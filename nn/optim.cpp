#include "tapegrad/nn/optim.hpp"

#include <cmath>
#include <cstdint>

namespace tg::nn {

namespace {

void check_hyper(double v, const char* key, const char* opt, bool positive) {
    if (!(positive ? v > 0 : v >= 0) || !std::isfinite(v))
        fail(key, opt, ": ", key, " is ", v, ", must be ", positive ? "> 0" : ">= 0");
}

// How a parameter's elements are stored (S) and computed (C).
struct F64IO {
    using S = double;
    using C = double;
    static C load(S v) { return v; }
    static S store(C v) { return v; }
};
struct F32IO {
    using S = float;
    using C = float;
    static C load(S v) { return v; }
    static S store(C v) { return v; }
};
struct F16IO {
    using S = std::uint16_t;
    using C = float;
    static C load(S v) { return f16_to_f32(v); }
    static S store(C v) { return f32_to_f16(v); }
};
struct BF16IO {
    using S = std::uint16_t;
    using C = float;
    static C load(S v) { return bf16_to_f32(v); }
    static S store(C v) { return f32_to_bf16(v); }
};

template <class F>
void with_io(DType dt, F&& f) {
    switch (dt) {
        case DType::f64: return f(F64IO{});
        case DType::f32: return f(F32IO{});
        case DType::f16: return f(F16IO{});
        case DType::bf16: return f(BF16IO{});
        default: fail("dtype", "optimizer: parameter dtype ", dtype_name(dt), " is not a float dtype");
    }
}

// The parameter's value (sharing its storage, which the step writes) and its gradient, both
// contiguous; false when the parameter has no gradient yet.
bool operands(const ag::Variable& p, std::size_t i, const char* opt, Tensor& value, Tensor& grad) {
    if (!p.has_grad()) return false;
    const Tensor g = p.grad();
    value = p.value();
    if (!value.is_contiguous()) fail("params", opt, ": parameter ", i, " is a strided view; it cannot be updated in place");
    if (g.shape() != value.shape() || g.dtype() != value.dtype())
        fail("params", opt, ": the gradient of parameter ", i, " is ", shape_str(g.shape()), " ", dtype_name(g.dtype()),
             ", the parameter ", shape_str(value.shape()), " ", dtype_name(value.dtype()));
    grad = g.contiguous();
    return true;
}

// Zeros at first use; converted when the parameter's dtype has changed since.
void ensure_state(Tensor& s, const Tensor& value) {
    const DType dt = compute_dtype(value.dtype());
    if (!s.defined()) s = Tensor::zeros(value.shape(), dt);
    else if (s.dtype() != dt) s = s.to(dt);
}

}  // namespace

Optimizer::Optimizer(std::vector<ag::Variable> params) : params_(std::move(params)) {
    for (std::size_t i = 0; i < params_.size(); ++i)
        if (!params_[i].defined() || !params_[i].requires_grad())
            fail("params", "optimizer: parameter ", i, " does not require a gradient");
}

void Optimizer::zero_grad() {
    for (ag::Variable& p : params_) p.zero_grad();
}

SGD::SGD(std::vector<ag::Variable> params, double lr, double momentum, double weight_decay)
    : Optimizer(std::move(params)), lr_(lr), momentum_(momentum), wd_(weight_decay), velocity_(params_.size()) {
    check_hyper(lr, "lr", "SGD", true);
    check_hyper(momentum, "momentum", "SGD", false);
    check_hyper(weight_decay, "weight_decay", "SGD", false);
}

void SGD::step() {
    for (std::size_t i = 0; i < params_.size(); ++i) {
        Tensor value, grad;
        if (!operands(params_[i], i, "SGD", value, grad)) continue;
        if (momentum_ > 0) ensure_state(velocity_[i], value);
        with_io(value.dtype(), [&](auto io) {
            using IO = decltype(io);
            using S = typename IO::S;
            using C = typename IO::C;
            S* w = value.data<S>();
            const S* g = grad.data<S>();
            C* v = momentum_ > 0 ? velocity_[i].data<C>() : nullptr;
            const C lr = static_cast<C>(lr_), mu = static_cast<C>(momentum_), wd = static_cast<C>(wd_);
            const std::int64_t n = value.numel();
            for (std::int64_t k = 0; k < n; ++k) {
                const C p = IO::load(w[k]);
                C d = IO::load(g[k]) + wd * p;
                if (v) {
                    v[k] = mu * v[k] + d;
                    d = v[k];
                }
                w[k] = IO::store(p - lr * d);
            }
        });
        value.bump_version();
    }
}

Adam::Adam(std::vector<ag::Variable> params, double lr, double beta1, double beta2, double eps, double weight_decay)
    : Optimizer(std::move(params)), lr_(lr), b1_(beta1), b2_(beta2), eps_(eps), wd_(weight_decay),
      m_(params_.size()), v_(params_.size()) {
    check_hyper(lr, "lr", "Adam", true);
    check_hyper(eps, "eps", "Adam", true);
    check_hyper(weight_decay, "weight_decay", "Adam", false);
    if (!(beta1 >= 0 && beta1 < 1)) fail("beta1", "Adam: beta1 is ", beta1, ", must be in [0, 1)");
    if (!(beta2 >= 0 && beta2 < 1)) fail("beta2", "Adam: beta2 is ", beta2, ", must be in [0, 1)");
}

void Adam::step() {
    ++t_;
    const double c1 = 1 - std::pow(b1_, static_cast<double>(t_)), c2 = 1 - std::pow(b2_, static_cast<double>(t_));
    for (std::size_t i = 0; i < params_.size(); ++i) {
        Tensor value, grad;
        if (!operands(params_[i], i, "Adam", value, grad)) continue;
        ensure_state(m_[i], value);
        ensure_state(v_[i], value);
        with_io(value.dtype(), [&](auto io) {
            using IO = decltype(io);
            using S = typename IO::S;
            using C = typename IO::C;
            S* w = value.data<S>();
            const S* g = grad.data<S>();
            C* m = m_[i].data<C>();
            C* v = v_[i].data<C>();
            const C lr = static_cast<C>(lr_), b1 = static_cast<C>(b1_), b2 = static_cast<C>(b2_),
                    eps = static_cast<C>(eps_), wd = static_cast<C>(wd_), k1 = static_cast<C>(c1),
                    k2 = static_cast<C>(c2), one = 1;
            const std::int64_t n = value.numel();
            for (std::int64_t k = 0; k < n; ++k) {
                const C p = IO::load(w[k]);
                const C d = IO::load(g[k]) + wd * p;
                m[k] = b1 * m[k] + (one - b1) * d;
                v[k] = b2 * v[k] + (one - b2) * d * d;
                w[k] = IO::store(p - lr * (m[k] / k1) / (std::sqrt(v[k] / k2) + eps));
            }
        });
        value.bump_version();
    }
}

// A schedule may bring the rate down to 0 (CosineLR with eta_min = 0).
void SGD::set_lr(double lr) {
    check_hyper(lr, "lr", "SGD::set_lr", false);
    lr_ = lr;
}

void Adam::set_lr(double lr) {
    check_hyper(lr, "lr", "Adam::set_lr", false);
    lr_ = lr;
}

}  // namespace tg::nn
