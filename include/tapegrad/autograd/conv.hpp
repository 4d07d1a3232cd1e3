// The convolution family as differentiable ops (docs/ops.md: the three computations, gradients). The three
// computations are each other's gradients:
//   conv            y  = CONV(x, W)      ∂x = CONVT(gy, W)       ∂W = CONV_BW(x, gy)
//   conv_transpose  r  = CONVT(u, W)     ∂u = CONV(gr, W)        ∂W = CONV_BW(gr, u)
//   conv_weight_grad dW = CONV_BW(x, u)  ∂x = CONVT(u, V)        ∂u = CONV(x, V)   (V = the cotangent of dW)
// so every backward is again a recorded conv op and second derivatives come for free.
// W is the canonical weight [G, Og, Ig, K...]; x, u are in the geometry's layout.
#pragma once
#include <vector>

#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg::ag {

// With a defined `bias` ([the result's channels], the data's dtype) the op adds it to every
// result channel as one recorded op: a 16-bit result is rounded once, after the bias. With
// `relu`, the op is relu(conv(...) + bias), the ReLU in the pass that adds the bias and its
// gradient taken from the op's output (the same values and gradients as ag::relu after it,
// one pass less over the result).
Variable conv(const Variable& x, const Variable& W, const ConvGeometry& g, const Variable& bias = {}, bool relu = false);
Variable conv_transpose(const Variable& u, const Variable& W, const ConvGeometry& g, const Variable& bias = {},
                        bool relu = false);
Variable conv_weight_grad(const Variable& x, const Variable& u, const ConvGeometry& g);

}  // namespace tg::ag
