// The three convolution kernels every op of the family runs on (docs/kernels.md).
// All take the canonical weight W[G, Og, Ig, K...] and a resolved ConvGeometry:
//   conv_forward       CONV:    i-side x  -> o-side y      (im2col + GEMM)
//   conv_transposed    CONVT:   o-side u  -> i-side r      (GEMM + col2im)
//   conv_weight_grad   CONV_BW: (x, u)    -> dW            (im2col + GEMM)
// Tensors are in the geometry's layout (NCX or NXC) with f64, f32, f16 or bf16 elements;
// f16/bf16 are widened to f32, computed, and rounded once. A defined `bias` (shape [the
// result's channels], any float dtype) joins the sum before that rounding. With `relu`,
// the forward and transposed kernels return relu of their result (bias included), in the
// pass that adds the bias, with the same bits as calling tg::relu on it (f16/bf16: on the
// rounded result); a layer followed by a ReLU saves a pass over its output.
// How a call runs (strategy, tiles, buffers) is planned first (tapegrad/ops/conv_plan.hpp);
// the column buffers are tiled to stay under the workspace budget (tapegrad/core/workspace.hpp).
#pragma once
#include "tapegrad/core/tensor.hpp"
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg {

Tensor conv_forward(const Tensor& x, const Tensor& W, const ConvGeometry& g, const Tensor& bias = {}, bool relu = false);
Tensor conv_transposed(const Tensor& u, const Tensor& W, const ConvGeometry& g, const Tensor& bias = {}, bool relu = false);
Tensor conv_weight_grad(const Tensor& x, const Tensor& u, const ConvGeometry& g);

}  // namespace tg
