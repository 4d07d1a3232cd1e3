// Private to ops/: carrying out a conv plan on raw buffers (ops/conv_kernels.cpp), shared by
// the public entry points and the f16/bf16 staging (ops/conv_lowp.cpp).
#pragma once
#include <cstdint>

#include "tapegrad/core/tensor.hpp"
#include "tapegrad/ops/conv_geometry.hpp"
#include "tapegrad/ops/conv_plan.hpp"

namespace tg::detail {

// The plan for `kind` on `g` in compute dtype `ct` (f32 or f64), with this call's team
// (team_size), the workspace budget and the transposed algorithm setting.
ConvPlan plan_call(ConvKind kind, const ConvGeometry& g, DType ct);

// Runs plan `p` on `g`. Inputs a, b and the result `out` by kind:
//   Forward:    a = x (i-side), b = W, out = y (o-side)
//   Transposed: a = u (o-side), b = W, out = r (i-side; accumulated unless p.writes_all)
//   WeightGrad: a = x, b = u, out = dW (accumulated)
template <class T>
void run_conv(const ConvPlan& p, const ConvGeometry& g, const T* a, const T* b, T* out);

// The f16/bf16 form of every kind (ops/conv_lowp.cpp): pieces widened to f32, run, rounded once.
Tensor conv_16bit(ConvKind kind, const Tensor& a, const Tensor& b, const Tensor& bias, const ConvGeometry& g,
                  const Shape& out_shape);

}  // namespace tg::detail
