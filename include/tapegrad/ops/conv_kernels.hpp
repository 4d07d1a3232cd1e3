// The three convolution kernels every op of the family runs on (docs/kernels.md).
// All take the canonical weight W[G, Og, Ig, K...] and a resolved ConvGeometry:
//   conv_forward       CONV:    i-side x  -> o-side y      (im2col + GEMM)
//   conv_transposed    CONVT:   o-side u  -> i-side r      (GEMM + col2im)
//   conv_weight_grad   CONV_BW: (x, u)    -> dW            (im2col + GEMM)
// Tensors are in the geometry's layout (NCX or NXC) with f64, f32, f16 or bf16 elements;
// f16/bf16 are widened to f32, computed, and rounded once. A defined `bias` (shape [the
// result's channels], any float dtype) joins the sum before that rounding.
// The column buffer is tiled over images and positions to stay under a byte budget.
#pragma once
#include <cstdint>

#include "tapegrad/core/tensor.hpp"
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg {

Tensor conv_forward(const Tensor& x, const Tensor& W, const ConvGeometry& g, const Tensor& bias = {});
Tensor conv_transposed(const Tensor& u, const Tensor& W, const ConvGeometry& g, const Tensor& bias = {});
Tensor conv_weight_grad(const Tensor& x, const Tensor& u, const ConvGeometry& g);

// Upper bound on the kernels' scratch memory (column buffer + staging), in bytes.
// Default 64 MiB. A tile always holds at least one position.
void set_conv_workspace_bytes(std::int64_t bytes);
std::int64_t conv_workspace_bytes();

// How conv_transposed runs a layer that is not depthwise: `Auto` picks per layer;
// `Col2im` is one GEMM with K = Og and a scatter-add of its columns; `Phases` is the
// stride-phase decomposition (conv_phases.hpp, NCX only; NXC layers keep col2im).
// Tests and benchmarks force one (also TAPEGRAD_TRANSPOSED=auto|col2im|phases at startup).
enum class TransposedAlgo { Auto, Col2im, Phases };
void set_transposed_algo(TransposedAlgo algo);
TransposedAlgo transposed_algo();

}  // namespace tg
