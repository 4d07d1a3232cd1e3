// Direct kernels for depthwise layers (one channel per group on each side, Ig = Og = 1).
// There the GEMM of im2col degenerates into a [1 × ∏K]·[∏K × P] product per group: all
// overhead and a column buffer ∏K times the input. Walking taps and runs of positions
// instead reads each input element once per tap and vectorises along the run.
#pragma once
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg {

// Same roles as the im2col kernels (see conv_kernels.cpp): x i-side, o o-side, w weight.
template <class T> void depthwise_forward(const ConvGeometry& g, const T* x, const T* w, T* y);
template <class T> void depthwise_transposed(const ConvGeometry& g, const T* u, const T* w, T* r);
template <class T> void depthwise_weight_grad(const ConvGeometry& g, const T* x, const T* u, T* dw);

}  // namespace tg
