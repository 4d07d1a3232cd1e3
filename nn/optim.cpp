#include "tapegrad/nn/optim.hpp"

#include "tapegrad/ops/elementwise_kernels.hpp"

#include <cmath>
#include <cstdint>
#include <set>
#include <type_traits>

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

// A state tensor made for parameter i must still have its shape: Variable::set_data may have
// replaced the parameter's value by one of another shape since.
void check_state_shape(const Tensor& s, const Shape& shape, std::size_t i, const char* opt) {
    if (s.defined() && s.shape() != shape)
        fail("params", opt, ": parameter ", i, " now has shape ", shape_str(shape), " but its optimizer state was made for ",
             shape_str(s.shape()), " (set_data changed it); make a new optimizer for the new parameter");
}

// Zeros at first use; converted when the parameter's dtype has changed since.
void ensure_state(Tensor& s, const Tensor& value, std::size_t i, const char* opt) {
    check_state_shape(s, value.shape(), i, opt);
    const DType dt = compute_dtype(value.dtype());
    if (!s.defined()) s = Tensor::zeros(value.shape(), dt);
    else if (s.dtype() != dt) s = s.to(dt);
}

Tensor scalar_f64(double v) { return Tensor::from(Shape{}, {v}, DType::f64); }
Tensor scalar_i64(std::int64_t v) {
    Tensor t = Tensor::empty(Shape{}, DType::i64);
    *t.data<std::int64_t>() = v;
    return t;
}

// Reads a state dictionary for `opt`: every key must be one of `hyper`, "step", or
// "<state>.<i>" for a `states` kind and a parameter index, and nothing may be missing.
class StateReader {
public:
    StateReader(const StateDict& d, const char* opt, const std::vector<ag::Variable>& params)
        : d_(d), opt_(opt), params_(params) {}

    void check_keys(const std::vector<std::string>& hyper, const std::vector<std::string>& states) {
        for (const std::string& k : d_.keys()) {
            bool ok = k == "step";
            for (const std::string& h : hyper) ok = ok || k == h;
            for (const std::string& st : states)
                if (!ok && k.size() > st.size() + 1 && k.compare(0, st.size() + 1, st + ".") == 0) {
                    const std::string idx = k.substr(st.size() + 1);
                    const bool digits = idx.find_first_not_of("0123456789") == std::string::npos && idx.size() <= 9 &&
                                        (idx.size() == 1 || idx[0] != '0');
                    if (digits && std::stoul(idx) < params_.size()) ok = true;
                }
            if (!ok) fail(k, opt_, ".load_state_dict: unexpected entry '", k, "' (", params_.size(), " parameters)");
        }
        for (const std::string& h : hyper)
            if (!d_.contains(h)) fail(h, opt_, ".load_state_dict: the entry '", h, "' is missing");
        if (!d_.contains("step")) fail("step", opt_, ".load_state_dict: the entry 'step' is missing");
    }
    double hyper(const std::string& k) const {
        const Tensor& t = d_.at(k);
        if (!t.shape().empty() || t.dtype() != DType::f64)
            fail(k, opt_, ".load_state_dict: '", k, "' must be a 0-d f64 tensor, not ", shape_str(t.shape()), " ",
                 dtype_name(t.dtype()));
        return t.item();
    }
    std::int64_t step() const {
        const Tensor& t = d_.at("step");
        if (!t.shape().empty() || t.dtype() != DType::i64)
            fail("step", opt_, ".load_state_dict: 'step' must be a 0-d i64 tensor");
        const std::int64_t s = *t.data<std::int64_t>();
        if (s < 0) fail("step", opt_, ".load_state_dict: 'step' is ", s, ", must be >= 0");
        return s;
    }
    // The state of parameter i (undefined when absent), a fresh copy in its compute dtype.
    Tensor state(const std::string& kind, std::size_t i) const {
        const std::string k = kind + "." + std::to_string(i);
        const Tensor* t = d_.find(k);
        if (!t) return {};
        const Tensor& p = params_[i].value();
        if (t->shape() != p.shape())
            fail(k, opt_, ".load_state_dict: '", k, "' has shape ", shape_str(t->shape()), ", parameter ", i, " is ",
                 shape_str(p.shape()));
        if (!is_float(t->dtype()))
            fail(k, opt_, ".load_state_dict: '", k, "' is ", dtype_name(t->dtype()), ", not a float dtype");
        const DType dt = compute_dtype(p.dtype());
        return t->dtype() == dt ? t->clone() : t->to(dt);
    }

private:
    const StateDict& d_;
    const char* opt_;
    const std::vector<ag::Variable>& params_;
};

}  // namespace

Optimizer::Optimizer(std::vector<ag::Variable> params) {
    for (std::size_t i = 0; i < params.size(); ++i) {
        if (!params[i].defined() || !params[i].requires_grad())
            fail("params", "optimizer: parameter ", i, " does not require a gradient");
        // The same parameter given twice is kept once (updated once per step).
        bool dup = false;
        for (const ag::Variable& p : params_) dup = dup || p.impl() == params[i].impl();
        if (!dup) params_.push_back(params[i]);
    }
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
    ++steps_;
    for (std::size_t i = 0; i < params_.size(); ++i) {
        Tensor value, grad;
        if (!operands(params_[i], i, "SGD", value, grad)) continue;
        if (momentum_ > 0) ensure_state(velocity_[i], value, i, kind());
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
    : Adam(std::move(params), lr, beta1, beta2, eps, weight_decay, false) {}

Adam::Adam(std::vector<ag::Variable> params, double lr, double beta1, double beta2, double eps, double weight_decay,
           bool decoupled)
    : Optimizer(std::move(params)), lr_(lr), b1_(beta1), b2_(beta2), eps_(eps), wd_(weight_decay), decoupled_(decoupled),
      m_(params_.size()), v_(params_.size()) {
    check_hyper(lr, "lr", kind(), true);
    check_hyper(eps, "eps", kind(), true);
    check_hyper(weight_decay, "weight_decay", kind(), false);
    if (!(beta1 >= 0 && beta1 < 1)) fail("beta1", kind(), ": beta1 is ", beta1, ", must be in [0, 1)");
    if (!(beta2 >= 0 && beta2 < 1)) fail("beta2", kind(), ": beta2 is ", beta2, ", must be in [0, 1)");
}

void Adam::step() {
    ++steps_;
    const double c1 = 1 - std::pow(b1_, static_cast<double>(steps_)), c2 = 1 - std::pow(b2_, static_cast<double>(steps_));
    for (std::size_t i = 0; i < params_.size(); ++i) {
        Tensor value, grad;
        if (!operands(params_[i], i, kind(), value, grad)) continue;
        ensure_state(m_[i], value, i, kind());
        ensure_state(v_[i], value, i, kind());
        with_io(value.dtype(), [&](auto io) {
            using IO = decltype(io);
            using S = typename IO::S;
            using C = typename IO::C;
            S* w = value.data<S>();
            const S* g = grad.data<S>();
            C* m = m_[i].data<C>();
            C* v = v_[i].data<C>();
            const C lr = static_cast<C>(lr_), b1 = static_cast<C>(b1_), b2 = static_cast<C>(b2_),
                    eps = static_cast<C>(eps_), k1 = static_cast<C>(c1), k2 = static_cast<C>(c2), one = 1;
            const C wd = decoupled_ ? C(0) : static_cast<C>(wd_);                  // L2 term of Adam
            const C shrink = decoupled_ ? one - lr * static_cast<C>(wd_) : one;   // AdamW's decay
            const std::int64_t n = value.numel();
            std::int64_t k = 0;
            if constexpr (std::is_same_v<S, C>)  // f32, f64: whole vectors first, the same roundings
                k = simd_ew::dispatch().active<C>().adam(w, g, m, v, n, {lr, b1, b2, eps, k1, k2, wd, shrink});
            for (; k < n; ++k) {
                const C p = shrink * IO::load(w[k]);
                const C d = IO::load(g[k]) + wd * IO::load(w[k]);
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

namespace tg::nn {

StateDict SGD::state_dict() const {
    StateDict d;
    d.insert("lr", scalar_f64(lr_));
    d.insert("momentum", scalar_f64(momentum_));
    d.insert("weight_decay", scalar_f64(wd_));
    d.insert("step", scalar_i64(steps_));
    for (std::size_t i = 0; i < velocity_.size(); ++i) {
        check_state_shape(velocity_[i], params_[i].shape(), i, kind());
        if (velocity_[i].defined()) d.insert("velocity." + std::to_string(i), velocity_[i].clone());
    }
    return d;
}

void SGD::load_state_dict(const StateDict& dict) {
    StateReader r(dict, "SGD", params_);
    r.check_keys({"lr", "momentum", "weight_decay"}, {"velocity"});
    const double lr = r.hyper("lr"), momentum = r.hyper("momentum"), wd = r.hyper("weight_decay");
    check_hyper(lr, "lr", "SGD", true);
    check_hyper(momentum, "momentum", "SGD", false);
    check_hyper(wd, "weight_decay", "SGD", false);
    const std::int64_t step = r.step();
    std::vector<Tensor> velocity(params_.size());
    for (std::size_t i = 0; i < params_.size(); ++i) velocity[i] = r.state("velocity", i);
    lr_ = lr;
    momentum_ = momentum;
    wd_ = wd;
    steps_ = step;
    velocity_ = std::move(velocity);
}

StateDict Adam::state_dict() const {
    StateDict d;
    d.insert("lr", scalar_f64(lr_));
    d.insert("beta1", scalar_f64(b1_));
    d.insert("beta2", scalar_f64(b2_));
    d.insert("eps", scalar_f64(eps_));
    d.insert("weight_decay", scalar_f64(wd_));
    d.insert("step", scalar_i64(steps_));
    for (std::size_t i = 0; i < m_.size(); ++i) {
        check_state_shape(m_[i], params_[i].shape(), i, kind());
        check_state_shape(v_[i], params_[i].shape(), i, kind());
        if (m_[i].defined()) d.insert("m." + std::to_string(i), m_[i].clone());
        if (v_[i].defined()) d.insert("v." + std::to_string(i), v_[i].clone());
    }
    return d;
}

void Adam::load_state_dict(const StateDict& dict) {
    StateReader r(dict, kind(), params_);
    r.check_keys({"lr", "beta1", "beta2", "eps", "weight_decay"}, {"m", "v"});
    const double lr = r.hyper("lr"), b1 = r.hyper("beta1"), b2 = r.hyper("beta2"), eps = r.hyper("eps"),
                 wd = r.hyper("weight_decay");
    check_hyper(lr, "lr", kind(), true);
    check_hyper(eps, "eps", kind(), true);
    check_hyper(wd, "weight_decay", kind(), false);
    if (!(b1 >= 0 && b1 < 1)) fail("beta1", kind(), ": beta1 is ", b1, ", must be in [0, 1)");
    if (!(b2 >= 0 && b2 < 1)) fail("beta2", kind(), ": beta2 is ", b2, ", must be in [0, 1)");
    const std::int64_t step = r.step();
    std::vector<Tensor> m(params_.size()), v(params_.size());
    for (std::size_t i = 0; i < params_.size(); ++i) {
        m[i] = r.state("m", i);
        v[i] = r.state("v", i);
        if (m[i].defined() != v[i].defined())
            fail("m." + std::to_string(i), "Adam.load_state_dict: parameter ", i, " has only one of m and v");
    }
    lr_ = lr;
    b1_ = b1;
    b2_ = b2;
    eps_ = eps;
    wd_ = wd;
    steps_ = step;
    m_ = std::move(m);
    v_ = std::move(v);
}

}  // namespace tg::nn
