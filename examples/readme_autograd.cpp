// The autograd example of the README (docs/autograd.md): a small model, its gradients, and
// a gradient check. The region between the doc markers is the README's block, word for word
// (tests/test_docs.cpp checks it), so the README's code compiles and runs (ctest).
// doc-begin: autograd
#include <iostream>

#include <tapegrad/tapegrad.hpp>

using namespace tg;
using namespace tg::ag;

int main() {
    // randn(shape): a normal random f64 tensor (gradient checks want f64; the default is f32)
    Generator gen(0);
    auto randn = [&](const Shape& s) { return tg::randn(s, DType::f64, gen); };
    // 1-D conv, 2 -> 3 channels, kernel 3, stride 2, pad 1, on 4 signals of length 8 -> length 4
    const ConvGeometry g = ConvGeometry::forward(
        {.N = 4, .C_in = 2, .C_out = 3, .in_size = {8}, .kernel = {3}, .stride = {2}, .pads_begin = {1}, .pads_end = {1}});
    auto model = [&](const std::vector<Variable>& p) {  // p = {x, W, b, V}
        Variable h = tanh(conv(p[0], p[1], g, p[2]));  // conv + bias, one op
        return matmul(reshape(h, {4, 12}), p[3]);  // [N, 3·4] · [12, 1]
    };
    Variable x = constant(randn(g.in_shape())), target = constant(randn({4, 1}));
    Variable W = param(randn(g.weight_shape()), "W"), b = param(randn({3}), "b"), V = param(randn({12, 1}), "V");

    Variable loss = mse_loss(model({x, W, b, V}), target);
    loss.backward();  // W.grad(), b.grad(), V.grad() now hold d loss / d parameter
    std::cout << "loss " << loss.item() << ", dloss/db " << shape_str(b.grad().shape()) << " = ["
              << b.grad().values()[0] << ", ...]\n";

    // Finite differences (f64) against the tape, for every input including x.
    auto f = [&](const std::vector<Variable>& p) { return mse_loss(model(p), target); };
    CheckReport r = gradcheck(f, {x.value(), W.value(), b.value(), V.value()}, {.names = {"x", "W", "b", "V"}});
    r.add(gradgradcheck(f, {x.value(), W.value(), b.value(), V.value()}, {.names = {"x", "W", "b", "V"}}));
    std::cout << r.table();
    return r.ok ? 0 : 1;
}
// doc-end: autograd
