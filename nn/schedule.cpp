#include "tapegrad/nn/schedule.hpp"

#include <cmath>
#include <numbers>

namespace tg::nn {

LRScheduler::LRScheduler(Optimizer& opt) : opt_(opt), base_lr_(opt.lr()) {}

void LRScheduler::step() {
    ++epoch_;
    opt_.set_lr(lr_at(epoch_));
}

StepLR::StepLR(Optimizer& opt, std::int64_t step_size, double gamma) : LRScheduler(opt), step_size_(step_size), gamma_(gamma) {
    if (step_size < 1) fail("step_size", "StepLR: step_size ", step_size, " must be >= 1");
    if (!(gamma >= 0) || !std::isfinite(gamma)) fail("gamma", "StepLR: gamma ", gamma, " must be >= 0");
}

double StepLR::lr_at(std::int64_t epoch) const {
    return base_lr_ * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

CosineLR::CosineLR(Optimizer& opt, std::int64_t T_max, double eta_min) : LRScheduler(opt), T_max_(T_max), eta_min_(eta_min) {
    if (T_max < 1) fail("T_max", "CosineLR: T_max ", T_max, " must be >= 1");
    if (!(eta_min >= 0) || !std::isfinite(eta_min)) fail("eta_min", "CosineLR: eta_min ", eta_min, " must be >= 0");
}

double CosineLR::lr_at(std::int64_t epoch) const {
    const double c = std::cos(std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(T_max_));
    return eta_min_ + (base_lr_ - eta_min_) * (1 + c) / 2;
}

double clip_grad_norm(const std::vector<ag::Variable>& params, double max_norm) {
    if (!(max_norm >= 0)) fail("max_norm", "clip_grad_norm: max_norm ", max_norm, " must be >= 0");
    double sq = 0;
    for (const ag::Variable& p : params)
        if (p.defined() && p.has_grad())
            for (double g : p.grad().values()) sq += g * g;
    const double norm = std::sqrt(sq);
    const double coef = max_norm / (norm + 1e-6);
    if (coef < 1)
        for (const ag::Variable& p : params)
            if (p.defined() && p.has_grad()) {
                const Tensor g = p.grad();
                std::vector<double> v = g.values();
                for (double& e : v) e *= coef;
                ag::Variable(p).set_grad(Tensor::from(g.shape(), v, g.dtype()));
            }
    return norm;
}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& opt, Options o) : opt_(opt), o_(o) {
    if (!(o.factor >= 0 && o.factor < 1)) fail("factor", "ReduceLROnPlateau: factor ", o.factor, " must be in [0, 1)");
    if (o.patience < 0) fail("patience", "ReduceLROnPlateau: patience ", o.patience, " must be >= 0");
    if (o.cooldown < 0) fail("cooldown", "ReduceLROnPlateau: cooldown ", o.cooldown, " must be >= 0");
    if (!(o.threshold >= 0) || !std::isfinite(o.threshold))
        fail("threshold", "ReduceLROnPlateau: threshold ", o.threshold, " must be >= 0");
    if (!(o.min_lr >= 0)) fail("min_lr", "ReduceLROnPlateau: min_lr ", o.min_lr, " must be >= 0");
    best_ = o.mode == Mode::min ? INFINITY : -INFINITY;
}

bool ReduceLROnPlateau::better(double a) const {
    const bool rel = o_.threshold_mode == ThresholdMode::rel;
    if (o_.mode == Mode::min) return a < (rel ? best_ * (1 - o_.threshold) : best_ - o_.threshold);
    return a > (rel ? best_ * (1 + o_.threshold) : best_ + o_.threshold);
}

void ReduceLROnPlateau::step(double metric) {
    if (std::isnan(metric)) fail("metric", "ReduceLROnPlateau::step: the metric is NaN");
    if (better(metric)) {
        best_ = metric;
        bad_ = 0;
    } else {
        ++bad_;
    }
    if (cooldown_left_ > 0) {
        --cooldown_left_;
        bad_ = 0;
    }
    if (bad_ > o_.patience) {
        const double old_lr = opt_.lr(), new_lr = std::max(old_lr * o_.factor, o_.min_lr);
        if (old_lr - new_lr > o_.eps) opt_.set_lr(new_lr);
        cooldown_left_ = o_.cooldown;
        bad_ = 0;
    }
}

}  // namespace tg::nn
