#include "tapegrad/nn/optim.hpp"

#include <cmath>

namespace tg::nn {

namespace {

void check_hyper(double v, const char* key, const char* opt, bool positive) {
    if (!(positive ? v > 0 : v >= 0) || !std::isfinite(v))
        fail(key, opt, ": ", key, " is ", v, ", must be ", positive ? "> 0" : ">= 0");
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
    : Optimizer(std::move(params)), lr_(lr), momentum_(momentum), wd_(weight_decay) {
    check_hyper(lr, "lr", "SGD", true);
    check_hyper(momentum, "momentum", "SGD", false);
    check_hyper(weight_decay, "weight_decay", "SGD", false);
    for (const ag::Variable& p : params_) velocity_.emplace_back(static_cast<std::size_t>(p.numel()), 0.0);
}

void SGD::step() {
    for (std::size_t i = 0; i < params_.size(); ++i) {
        if (!params_[i].has_grad()) continue;
        const Tensor g = params_[i].grad();
        std::vector<double> p = params_[i].value().values();
        const std::vector<double> gv = g.values();
        std::vector<double>& v = velocity_[i];
        for (std::size_t k = 0; k < p.size(); ++k) {
            const double d = gv[k] + wd_ * p[k];
            v[k] = momentum_ * v[k] + d;
            p[k] -= lr_ * (momentum_ > 0 ? v[k] : d);
        }
        params_[i].assign(Tensor::from(params_[i].shape(), p, params_[i].dtype()));
    }
}

Adam::Adam(std::vector<ag::Variable> params, double lr, double beta1, double beta2, double eps, double weight_decay)
    : Optimizer(std::move(params)), lr_(lr), b1_(beta1), b2_(beta2), eps_(eps), wd_(weight_decay) {
    check_hyper(lr, "lr", "Adam", true);
    check_hyper(eps, "eps", "Adam", true);
    check_hyper(weight_decay, "weight_decay", "Adam", false);
    if (!(beta1 >= 0 && beta1 < 1)) fail("beta1", "Adam: beta1 is ", beta1, ", must be in [0, 1)");
    if (!(beta2 >= 0 && beta2 < 1)) fail("beta2", "Adam: beta2 is ", beta2, ", must be in [0, 1)");
    for (const ag::Variable& p : params_) {
        m_.emplace_back(static_cast<std::size_t>(p.numel()), 0.0);
        v_.emplace_back(static_cast<std::size_t>(p.numel()), 0.0);
    }
}

void Adam::step() {
    ++t_;
    const double c1 = 1 - std::pow(b1_, static_cast<double>(t_)), c2 = 1 - std::pow(b2_, static_cast<double>(t_));
    for (std::size_t i = 0; i < params_.size(); ++i) {
        if (!params_[i].has_grad()) continue;
        const Tensor g = params_[i].grad();
        std::vector<double> p = params_[i].value().values();
        const std::vector<double> gv = g.values();
        for (std::size_t k = 0; k < p.size(); ++k) {
            const double d = gv[k] + wd_ * p[k];
            m_[i][k] = b1_ * m_[i][k] + (1 - b1_) * d;
            v_[i][k] = b2_ * v_[i][k] + (1 - b2_) * d * d;
            p[k] -= lr_ * (m_[i][k] / c1) / (std::sqrt(v_[i][k] / c2) + eps_);
        }
        params_[i].assign(Tensor::from(params_[i].shape(), p, params_[i].dtype()));
    }
}

}  // namespace tg::nn
