#include "tapegrad/autograd/conv.hpp"

#include <algorithm>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/ops/conv_kernels.hpp"

namespace tg::ag {

namespace {

// The inputs of a conv op: data and weight, then the bias when there is one.
std::vector<Variable> operands(const Variable& a, const Variable& W, const Variable& bias, const char* op) {
    if (bias.defined() && bias.dtype() != a.dtype())
        fail("bias", op, ": bias has dtype ", dtype_name(bias.dtype()), ", the data has ", dtype_name(a.dtype()));
    if (bias.defined()) return {a, W, bias};
    return {a, W};
}

// ∂bias: the result's gradient summed over everything but the channel axis.
Variable bias_grad(const Variable& gy, Layout layout) {
    std::vector<int> axes;
    const int C = layout == Layout::NCX ? 1 : gy.ndim() - 1;
    for (int a = 0; a < gy.ndim(); ++a)
        if (a != C) axes.push_back(a);
    return sum(gy, axes);
}

// The gradient of the result before a fused ReLU: gy through it (its mask from the output).
Variable through_relu(const SavedContext& c, const Variable& gy, bool relu) {
    return relu ? relu_grad(gy, c.output().value()) : gy;
}

}  // namespace

Variable conv(const Variable& x, const Variable& W, const ConvGeometry& g, const Variable& bias, bool relu) {
    const Tensor b = bias.defined() ? bias.value() : Tensor();
    return record(relu ? "conv_relu" : "conv", conv_forward(x.value(), W.value(), g, b, relu), operands(x, W, bias, "conv"),
                  {.inputs = {0, 1}, .output = relu},
                  [g, has_bias = bias.defined(), relu](const SavedContext& c, const Variable& g_out) -> Grads {
                      const Variable gy = through_relu(c, g_out, relu);
                      Grads out{c.needs_grad(0) ? conv_transpose(gy, c.input(1), g) : Variable(),
                                c.needs_grad(1) ? conv_weight_grad(c.input(0), gy, g) : Variable()};
                      if (has_bias) out.push_back(c.needs_grad(2) ? bias_grad(gy, g.layout) : Variable());
                      return out;
                  });
}

Variable conv_transpose(const Variable& u, const Variable& W, const ConvGeometry& g, const Variable& bias, bool relu) {
    const Tensor b = bias.defined() ? bias.value() : Tensor();
    return record(relu ? "conv_transpose_relu" : "conv_transpose", conv_transposed(u.value(), W.value(), g, b, relu),
                  operands(u, W, bias, "conv_transpose"), {.inputs = {0, 1}, .output = relu},
                  [g, has_bias = bias.defined(), relu](const SavedContext& c, const Variable& g_out) -> Grads {
                      const Variable gr = through_relu(c, g_out, relu);
                      // gr is on the i-side, u on the o-side
                      Grads out{c.needs_grad(0) ? conv(gr, c.input(1), g) : Variable(),
                                c.needs_grad(1) ? conv_weight_grad(gr, c.input(0), g) : Variable()};
                      if (has_bias) out.push_back(c.needs_grad(2) ? bias_grad(gr, g.layout) : Variable());
                      return out;
                  });
}

Variable conv_weight_grad(const Variable& x, const Variable& u, const ConvGeometry& g) {
    return record("conv_weight_grad", tg::conv_weight_grad(x.value(), u.value(), g), {x, u}, {.inputs = {0, 1}},
                  [g](const SavedContext& c, const Variable& V) -> Grads {
                      // ⟨CONV_BW(x, u), V⟩ = ⟨CONV(x, V), u⟩ = ⟨x, CONVT(u, V)⟩
                      return {c.needs_grad(0) ? conv_transpose(c.input(1), V, g) : Variable(),
                              c.needs_grad(1) ? conv(c.input(0), V, g) : Variable()};
                  });
}

}  // namespace tg::ag
