// Learning-rate schedules and gradient clipping.
//
//   nn::SGD opt(net.parameters(), 0.1);
//   nn::CosineLR sched(opt, 100);              // or nn::StepLR sched(opt, 30, 0.1)
//   for (int epoch = 0; epoch < 100; ++epoch) {
//       for (...) { opt.zero_grad(); loss.backward(); nn::clip_grad_norm(net.parameters(), 1.0); opt.step(); }
//       sched.step();                          // once per epoch, after the optimizer's steps
//   }
//
// A schedule reads the optimizer's learning rate when it is built (the base rate) and sets
// it at every step() from a closed form of the epoch count, as torch.optim.lr_scheduler's
// closed forms do. It holds a reference to the optimizer, which must outlive it.
#pragma once
#include <cstdint>
#include <vector>

#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/nn/optim.hpp"

namespace tg::nn {

class LRScheduler {
public:
    explicit LRScheduler(Optimizer& opt);
    virtual ~LRScheduler() = default;
    // Advances one epoch and sets the optimizer's rate to lr_at(last_epoch()).
    void step();
    // Epochs completed (0 after construction).
    std::int64_t last_epoch() const { return epoch_; }
    double base_lr() const { return base_lr_; }
    // The optimizer's current rate.
    double last_lr() const { return opt_.lr(); }
    // The rate of epoch `epoch` (epoch 0 is base_lr()).
    virtual double lr_at(std::int64_t epoch) const = 0;

protected:
    Optimizer& opt_;
    double base_lr_;
    std::int64_t epoch_ = 0;
};

// lr = base·gamma^⌊epoch / step_size⌋ (torch.optim.lr_scheduler.StepLR).
class StepLR : public LRScheduler {
public:
    StepLR(Optimizer& opt, std::int64_t step_size, double gamma = 0.1);
    double lr_at(std::int64_t epoch) const override;

private:
    std::int64_t step_size_;
    double gamma_;
};

// lr = eta_min + (base − eta_min)·(1 + cos(π·epoch/T_max))/2: from base down to eta_min at
// epoch T_max, then back up (the cosine continues, as torch's CosineAnnealingLR).
class CosineLR : public LRScheduler {
public:
    CosineLR(Optimizer& opt, std::int64_t T_max, double eta_min = 0);
    double lr_at(std::int64_t epoch) const override;

private:
    std::int64_t T_max_;
    double eta_min_;
};

// Cuts the learning rate when a metric stops improving, as torch.optim.lr_scheduler.
// ReduceLROnPlateau: call step(metric) once per epoch. The metric improves when it beats the
// best so far by more than `threshold`: relatively (best·(1 ∓ threshold), threshold_mode rel)
// or absolutely (best ∓ threshold, abs), lower being better in mode min, higher in max. After
// more than `patience` epochs without improvement the rate becomes max(lr·factor, min_lr)
// (a change smaller than eps is skipped), and `cooldown` epochs follow in which bad epochs
// are not counted.
class ReduceLROnPlateau {
public:
    enum class Mode { min, max };
    enum class ThresholdMode { rel, abs };
    struct Options {
        Mode mode = Mode::min;
        double factor = 0.1;
        std::int64_t patience = 10;
        double threshold = 1e-4;
        ThresholdMode threshold_mode = ThresholdMode::rel;
        std::int64_t cooldown = 0;
        double min_lr = 0;
        double eps = 1e-8;
    };
    explicit ReduceLROnPlateau(Optimizer& opt, Options o);
    explicit ReduceLROnPlateau(Optimizer& opt) : ReduceLROnPlateau(opt, Options{}) {}
    void step(double metric);
    double best() const { return best_; }
    std::int64_t num_bad_epochs() const { return bad_; }
    double last_lr() const { return opt_.lr(); }

private:
    bool better(double a) const;
    Optimizer& opt_;
    Options o_;
    double best_;
    std::int64_t bad_ = 0, cooldown_left_ = 0;
};

// Scales the gradients of `params` so that their joint L2 norm (over every element of every
// gradient, as if concatenated) is at most max_norm, and returns that norm as it was before
// clipping (torch.nn.utils.clip_grad_norm_): when the norm exceeds max_norm every gradient
// is multiplied by max_norm/(norm + 1e-6). Parameters without a gradient are skipped. Each
// clipped gradient is replaced by a new tensor (Variable::set_grad), so tensors that
// shared storage with it are left alone. The norm is computed in f64.
double clip_grad_norm(const std::vector<ag::Variable>& params, double max_norm);

}  // namespace tg::nn
