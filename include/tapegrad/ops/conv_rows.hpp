// Direct kernels for layers with tens of channels per group, the channels as the vector.
//
// The operand a result is summed from (forward and weight gradient: x, i-side; transposed: u,
// o-side) is copied per chunk of images into rows of the last spatial axis, channels innermost
// (a position's reduction channels contiguous), with zeros for the last axis' padding taps; the
// weight into one [reduction channel][result channel] block per tap, result channels padded to a
// whole vector. A result row (all outer coordinates fixed) is then a few spans of results along
// the last axis, each a sum over its taps and reduction channels of one broadcast input element
// times a vector of weights (tapegrad/ops/conv_rows_kernels.hpp): no column buffer, no
// scatter-add. Per axis, with stride s, dilation d and pad pb:
//   forward:     y at q reads x at q·s − pb + k·d, every tap k; one span per row, inputs
//                s positions apart.
//   transposed:  r at q reads u at (q + pb − k·d)/s where that divides; the results of a
//                row with q ≡ ρ (mod s) form one span (its taps are the same for every q
//                in it), inputs 1 position apart.
// On the outer axes a tap that reads outside the operand is left out; on the last axis it
// multiplies a zero of the copy. The row's results go from a vector-per-position buffer to
// the result, every element written. NCX tensors are transposed on the way in and out; NXC
// tensors already hold a position's channels together, and are copied.
//
// Non-finite weights: the transposed kernel multiplies the weight by zeros the reference
// never forms products with, so it declines (returns false) when the weight holds an
// infinity or a NaN, and the caller runs the GEMM path (as tapegrad/ops/conv_small.hpp).
#pragma once
#include <cstdint>

#include "tapegrad/ops/conv_geometry.hpp"

namespace tg {

// Same roles as the im2col kernels (ops/conv_exec.hpp): x i-side, u/y o-side, w the weight.
// Every element of y and r is written; dW is accumulated. `team` threads at most; results do not depend on it.
template <class T> void rows_forward(const ConvGeometry& g, const T* x, const T* w, T* y, int team);
template <class T> bool rows_transposed(const ConvGeometry& g, const T* u, const T* w, T* r, int team);
// dW[g, o, i, k] += Σ_n Σ_q x(q·s − pb + k·d) · u(q) (accumulated, as the other kernels): per (group, tap)
// a block of i-side × o-side sums over every image's result rows, in order (any team gives
// the same bits). With fewer than 16 i-side channels the images are summed in
// kRowsGradImageParts parts, a thread each, added in order. Declines (false) where x or u
// holds an infinity or a NaN (the halo's zeros).
template <class T> bool rows_weight_grad(const ConvGeometry& g, const T* x, const T* u, T* dw, int team);

// The parts rows_weight_grad sums the images in: kRowsGradImageParts (or N, if fewer) with
// fewer than 16 i-side channels, each by one thread with no barrier; else 1 (the team's grid).
std::int64_t rows_grad_image_parts(const ConvGeometry& g);

// Whether rows_weight_grad's (group, tap) pairs sum runs of consecutive last-axis taps at
// once: one slice of fewer than 16 i-side channels, dilation 1 on the last axis (the runs'
// reads are then one stretch of each copied row). At 1 thread a run is the whole last axis.
bool rows_grad_takes_runs(const ConvGeometry& g);

// Result channels the kernels compute per group at the active instruction set: `channels`
// rounded up to a whole vector of T (the rule in plan_conv weighs the padding).
std::int64_t rows_padded_channels(std::int64_t channels, std::size_t elem_bytes);

}  // namespace tg
