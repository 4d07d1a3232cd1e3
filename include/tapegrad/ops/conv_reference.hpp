// Direct-loop reference of the three convolution computations: the test oracle, and the
// clearest statement of what the fast kernels compute. Straight from docs/ops.md#the-three-computations:
//   CONV    y[n, g·Og+o, j] = Σ_i Σ_k x[n, g·Ig+i, j·s + k·d − pb] · W[g, o, i, k]
//   CONVT   r[n, g·Ig+i, t] = Σ_o Σ_k Σ_{j : j·s + k·d − pb = t} u[n, g·Og+o, j] · W[g, o, i, k]
//   CONV_BW dW[g, o, i, k]  = Σ_n Σ_j u[n, g·Og+o, j] · x[n, g·Ig+i, j·s + k·d − pb]
// Out-of-range reads are zero and out-of-range writes are dropped. Computes in f64 and
// returns f64, whatever the inputs' dtype.
#pragma once
#include "tapegrad/core/tensor.hpp"
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg::reference {

Tensor conv_forward(const Tensor& x, const Tensor& W, const ConvGeometry& g);
Tensor conv_transposed(const Tensor& u, const Tensor& W, const ConvGeometry& g);
Tensor conv_weight_grad(const Tensor& x, const Tensor& u, const ConvGeometry& g);

}  // namespace tg::reference
