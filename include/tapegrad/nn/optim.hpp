// Optimizers: each step reads the gradients accumulated by backward() and updates every
// parameter's storage in place, element by element, then bumps its version as
// Variable::assign does, so a backward through a graph built before the step reports stale
// values instead of using them. A parameter with no gradient yet (grad() undefined) is
// skipped, and its state is left as it was.
//
// State (SGD's momentum, Adam's moments) is kept as Tensors, created as zeros at a
// parameter's first update: f64 for f64 parameters, f32 for f32, f16 and bf16 ones. The
// update is computed in that type (f16/bf16 parameters are widened to f32 and the result
// rounded once). If a parameter's dtype changes (Module::to), its state is converted too.
//
// Resuming: state_dict() is the optimizer's whole state as named tensors (0-d f64 tensors
// for the hyper-parameters, a 0-d i64 "step" for the number of step() calls, one tensor per
// parameter and state kind, "velocity.3" or "m.0" / "v.0", present only for parameters
// that have state). load_state_dict() checks every entry against the optimizer's
// parameters (kind, count, shapes, float dtypes, hyper-parameter ranges) before changing
// anything, then copies it in: hyper-parameters included, as torch.optim does. With the
// module's weights restored too, the next step() is bit for bit the step the saved
// optimizer would have taken. tapegrad/nn/checkpoint.hpp saves both together.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/nn/module.hpp"

namespace tg::nn {

class Optimizer {
public:
    explicit Optimizer(std::vector<ag::Variable> params);
    virtual ~Optimizer() = default;
    virtual void step() = 0;
    void zero_grad();
    const std::vector<ag::Variable>& params() const { return params_; }
    // step() calls so far (restored by load_state_dict).
    std::int64_t steps() const { return steps_; }
    // "SGD" or "Adam": checkpoints record it and refuse to load one kind into the other.
    virtual const char* kind() const = 0;
    // Fresh copies of the whole state (see the top of this file).
    virtual StateDict state_dict() const = 0;
    // All or nothing: an error naming the offending entry leaves the optimizer unchanged.
    virtual void load_state_dict(const StateDict& dict) = 0;
    // The learning rate, which schedules (tapegrad/nn/schedule.hpp) read and set between steps.
    virtual double lr() const = 0;
    virtual void set_lr(double lr) = 0;

protected:
    std::vector<ag::Variable> params_;
    std::int64_t steps_ = 0;
};

// p -= lr·(g + wd·p), with optional momentum: v = μ·v + g', p -= lr·v (torch.optim.SGD
// without dampening or Nesterov).
class SGD : public Optimizer {
public:
    SGD(std::vector<ag::Variable> params, double lr, double momentum = 0, double weight_decay = 0);
    void step() override;
    double lr() const override { return lr_; }
    void set_lr(double lr) override;
    // The momentum buffer of parameter i (undefined before its first update, or without momentum).
    const Tensor& velocity(std::size_t i) const { return velocity_.at(i); }
    const char* kind() const override { return "SGD"; }
    StateDict state_dict() const override;
    void load_state_dict(const StateDict& dict) override;

private:
    double lr_, momentum_, wd_;
    std::vector<Tensor> velocity_;
};

// Adam (Kingma & Ba), with bias correction, as torch.optim.Adam (L2 weight decay added to
// the gradient, not AdamW). The step count is the optimizer's: step() calls so far (steps()).
class Adam : public Optimizer {
public:
    Adam(std::vector<ag::Variable> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
         double eps = 1e-8, double weight_decay = 0);
    void step() override;
    double lr() const override { return lr_; }
    void set_lr(double lr) override;
    const Tensor& first_moment(std::size_t i) const { return m_.at(i); }
    const char* kind() const override { return decoupled_ ? "AdamW" : "Adam"; }
    StateDict state_dict() const override;
    void load_state_dict(const StateDict& dict) override;

protected:
    // decoupled: AdamW's weight decay (p ← p·(1 − lr·wd) before the update, the gradient
    // left alone) instead of Adam's L2 term added to the gradient.
    Adam(std::vector<ag::Variable> params, double lr, double beta1, double beta2, double eps, double weight_decay,
         bool decoupled);

private:
    double lr_, b1_, b2_, eps_, wd_;
    bool decoupled_ = false;
    std::vector<Tensor> m_, v_;
};

// AdamW (Loshchilov & Hutter), as torch.optim.AdamW: decoupled weight decay (default 0.01),
// p ← p·(1 − lr·wd), then Adam's update from the plain gradient. Checkpoints record it as
// "AdamW" and refuse to load an Adam state into it (or the reverse).
class AdamW : public Adam {
public:
    AdamW(std::vector<ag::Variable> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
          double eps = 1e-8, double weight_decay = 0.01)
        : Adam(std::move(params), lr, beta1, beta2, eps, weight_decay, true) {}
};

}  // namespace tg::nn
