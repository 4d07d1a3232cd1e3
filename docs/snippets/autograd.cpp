// docs/autograd.md's own op, compiled and checked (ctest: docs.snippet.autograd).
#include <tapegrad/tapegrad.hpp>

#include <iostream>

using namespace tg;
using namespace tg::ag;

// doc-begin: swish
Variable swish(const Variable& x) {
    Tensor y;
    {
        NoGradGuard no_grad;  // compute the value without recording the pieces
        y = mul(x, sigmoid(x)).value();
    }
    return record("swish", y, {x}, {.inputs = {0}},  // the backward reads input 0
                  [](const SavedContext& ctx, const Variable& g) -> Grads {
                      const Variable x0 = ctx.input(0);
                      const Variable s = sigmoid(x0);
                      const Variable ds = mul(s, affine(s, -1, 1));  // σ·(1 − σ)
                      return {mul(g, add(s, mul(x0, ds)))};         // one gradient per input
                  });
}
// doc-end: swish

int main() {
    Generator gen(0);
    const Tensor x = randn({3, 4}, DType::f64, gen);
    auto f = [](const std::vector<Variable>& v) { return swish(v[0]); };
    CheckReport r = gradcheck(f, {x});
    r.add(gradgradcheck(f, {x}));
    if (!r.ok) std::cout << r.table();
    return r.ok ? 0 : 1;
}
