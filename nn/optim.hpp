// Optimizers: each step reads the gradients accumulated by backward() and updates the
// parameters in place (Variable::assign bumps their version, so a backward through a
// graph built before the step reports stale values instead of using them).
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

protected:
    std::vector<ag::Variable> params_;
};

// p -= lr·(g + wd·p), with optional momentum: v = μ·v + g', p -= lr·v.
class SGD : public Optimizer {
public:
    SGD(std::vector<ag::Variable> params, double lr, double momentum = 0, double weight_decay = 0);
    void step() override;

private:
    double lr_, momentum_, wd_;
    std::vector<std::vector<double>> velocity_;
};

// Adam (Kingma & Ba), with bias correction, as torch.optim.Adam.
class Adam : public Optimizer {
public:
    Adam(std::vector<ag::Variable> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
         double eps = 1e-8, double weight_decay = 0);
    void step() override;

private:
    double lr_, b1_, b2_, eps_, wd_;
    long t_ = 0;
    std::vector<std::vector<double>> m_, v_;
};

}  // namespace tg::nn
