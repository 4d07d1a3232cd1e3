// The convolution family as differentiable ops (OPS.md sections 2 and 7). The three
// computations are each other's gradients:
//   conv            y  = CONV(x, W)      ∂x = CONVT(gy, W)       ∂W = CONV_BW(x, gy)
//   conv_transpose  r  = CONVT(u, W)     ∂u = CONV(gr, W)        ∂W = CONV_BW(gr, u)
//   conv_weight_grad dW = CONV_BW(x, u)  ∂x = CONVT(u, V)        ∂u = CONV(x, V)   (V = the cotangent of dW)
// so every backward is again a recorded conv op and second derivatives come for free.
// W is the canonical weight [G, Og, Ig, K...]; x, u are in the geometry's layout.
#pragma once
#include <vector>

#include "autograd/variable.hpp"
#include "ops/conv_geometry.hpp"
#include "ops/opset.hpp"

namespace tg::ag {

Variable conv(const Variable& x, const Variable& W, const ConvGeometry& g);
Variable conv_transpose(const Variable& u, const Variable& W, const ConvGeometry& g);
Variable conv_weight_grad(const Variable& x, const Variable& u, const ConvGeometry& g);

// One spec op (ops/opset.hpp) on the tape, with `inputs` in spec order (data, filter, then
// output_shape or bias). The stored filter is relaid to W by differentiable permute and
// reshape, so the filter gradient comes back in the op's own layout; output_shape gets no
// gradient.
Variable spec_op(const ResolvedOp& r, const std::vector<Variable>& inputs);

}  // namespace tg::ag
