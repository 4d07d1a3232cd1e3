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
#pragma once
#include <vector>

#include "tapegrad/autograd/variable.hpp"

namespace tg::nn {

class Optimizer {
public:
    explicit Optimizer(std::vector<ag::Variable> params);
    virtual ~Optimizer() = default;
    virtual void step() = 0;
    void zero_grad();
    const std::vector<ag::Variable>& params() const { return params_; }
    // The learning rate, which schedules (nn/schedule.hpp) read and set between steps.
    virtual double lr() const = 0;
    virtual void set_lr(double lr) = 0;

protected:
    std::vector<ag::Variable> params_;
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

private:
    double lr_, momentum_, wd_;
    std::vector<Tensor> velocity_;
};

// Adam (Kingma & Ba), with bias correction, as torch.optim.Adam (L2 weight decay added to
// the gradient, not AdamW). The step count is the optimizer's: step() calls so far.
class Adam : public Optimizer {
public:
    Adam(std::vector<ag::Variable> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
         double eps = 1e-8, double weight_decay = 0);
    void step() override;
    double lr() const override { return lr_; }
    void set_lr(double lr) override;
    const Tensor& first_moment(std::size_t i) const { return m_.at(i); }
    const Tensor& second_moment(std::size_t i) const { return v_.at(i); }

private:
    double lr_, b1_, b2_, eps_, wd_;
    long t_ = 0;
    std::vector<Tensor> m_, v_;
};

}  // namespace tg::nn
