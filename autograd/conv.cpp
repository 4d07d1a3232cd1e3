#include "autograd/conv.hpp"

#include <algorithm>

#include "autograd/ops.hpp"
#include "ops/conv_kernels.hpp"

namespace tg::ag {

Variable conv(const Variable& x, const Variable& W, const ConvGeometry& g) {
    return record("conv", conv_forward(x.value(), W.value(), g), {x, W}, {.inputs = {0, 1}},
                  [g](const SavedContext& c, const Variable& gy) -> Grads {
                      return {c.needs_grad(0) ? conv_transpose(gy, c.input(1), g) : Variable(),
                              c.needs_grad(1) ? conv_weight_grad(c.input(0), gy, g) : Variable()};
                  });
}

Variable conv_transpose(const Variable& u, const Variable& W, const ConvGeometry& g) {
    return record("conv_transpose", conv_transposed(u.value(), W.value(), g), {u, W}, {.inputs = {0, 1}},
                  [g](const SavedContext& c, const Variable& gr) -> Grads {
                      // gr is on the i-side, u on the o-side
                      return {c.needs_grad(0) ? conv(gr, c.input(1), g) : Variable(),
                              c.needs_grad(1) ? conv_weight_grad(gr, c.input(0), g) : Variable()};
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

Variable spec_op(const ResolvedOp& r, const std::vector<Variable>& inputs) {
    const std::size_t need = static_cast<std::size_t>(std::max({r.data_input, r.filter_input, r.bias_input})) + 1;
    if (inputs.size() < need) fail("inputs", r.name, ": ", inputs.size(), " inputs, expects at least ", need);
    const Variable& x = inputs[static_cast<std::size_t>(r.data_input)];
    const Variable& filter = inputs[static_cast<std::size_t>(r.filter_input)];
    const Variable f = r.filter_perm.empty() ? filter : permute(filter, r.filter_perm);
    const Variable W = reshape(f, r.geom.weight_shape());
    Variable y = r.comp == Computation::Conv ? conv(x, W, r.geom) : conv_transpose(x, W, r.geom);
    if (r.has_bias) y = add_channel_bias(y, inputs[static_cast<std::size_t>(r.bias_input)], r.geom.layout);
    return y;
}

}  // namespace tg::ag
