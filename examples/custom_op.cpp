// A user-defined differentiable op with ag::record(), checked the way tapegrad checks its own.
//
// swish(x) = x·σ(x). The forward computes the value with any code at all (here: existing
// ops with grad mode off, but raw loops over Tensor::data<T>() work the same). record()
// puts one node on the tape; its backward maps the result's gradient g to the input's:
//     ∂swish/∂x = σ(x) + x·σ(x)·(1 − σ(x)),   so   gx = g·(σ + x·σ·(1 − σ)).
// Because the backward is written with differentiable ops, the gradient is itself
// differentiable: gradgradcheck (second derivatives) passes too.
//
// Run: build/release/custom_op   (exit 0 when every check passes; ctest runs it)
#include <cstdio>

#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/autograd/ops.hpp"

using namespace tg;
using namespace tg::ag;

Variable swish(const Variable& x) {
    Tensor y;
    {
        NoGradGuard no_grad;  // compute the value without recording the pieces
        y = mul(x, sigmoid(x)).value();
    }
    return record("swish", y, {x}, {.inputs = {0}},  // the backward reads input 0
                  [](const SavedContext& ctx, const Variable& g) -> Grads {
                      const Variable x0 = ctx.input(0);  // read inputs only through ctx
                      const Variable s = sigmoid(x0);
                      const Variable ds = mul(s, affine(s, -1, 1));  // σ·(1 − σ)
                      return {mul(g, add(s, mul(x0, ds)))};         // one gradient per input
                  });
}

int main() {
    const Tensor x = Tensor::from({2, 3}, {-2.0, -0.5, 0.0, 0.25, 1.0, 3.0}, DType::f64);
    const Function f = [](const std::vector<Variable>& in) { return swish(in[0]); };

    CheckOptions opt;
    opt.names = {"x"};
    CheckReport report = gradcheck(f, {x}, opt);  // Jᵀv of the tape vs central differences
    report.add(gradgradcheck(f, {x}, opt));      // the same for the backward itself
    std::printf("%s", report.table().c_str());

    // A planted mistake (the x·σ' term dropped) must be caught.
    const Function wrong = [](const std::vector<Variable>& in) {
        Tensor y;
        {
            NoGradGuard no_grad;
            y = mul(in[0], sigmoid(in[0])).value();
        }
        return record("swish_wrong", y, in, {.inputs = {0}},
                      [](const SavedContext& ctx, const Variable& g) -> Grads { return {mul(g, sigmoid(ctx.input(0)))}; });
    };
    const CheckReport caught = gradcheck(wrong, {x}, opt);
    std::printf("planted mistake caught: %s\n%s", caught.ok ? "no" : "yes", caught.failures().c_str());
    return report.ok && !caught.ok ? 0 : 1;
}
