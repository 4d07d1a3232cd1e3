// Pooling as differentiable ops, N-d (D = 1, 2, 3, ...), NCX: x [N, C, X...] -> [N, C, Y...].
//
// Both run on the depthwise convolution geometry (groups = C, one input and one output
// channel per group) that pool_geometry() builds with ConvGeometry::forward, so the output
// size per axis is the floor rule Y = ⌊(X + 2·pad − d·(K−1) − 1)/s⌋ + 1 (PyTorch's
// ceil_mode = false).
//
//   max_pool  the largest element of each window; padded positions never win (they are
//             −∞, as in PyTorch, which also requires pad ≤ K/2 so that every window holds
//             a real element). The first largest element wins a tie; a NaN wins over any
//             number (PyTorch propagates NaN the same way). The backward scatters the
//             gradient to the winners (adding where windows overlap) with a recorded op
//             whose own backward is the gather at the same positions, so second
//             derivatives work (they are zero almost everywhere).
//   avg_pool  the window's sum divided by ∏K, counting padded zeros (PyTorch's default
//             count_include_pad = true): a depthwise ag::conv with the constant weight
//             1/∏K, so it runs on the conv kernels and its backward is conv_transpose.
#pragma once
#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg::ag {

// The pooling geometry of an input [N, C, X...] (D = kernel.size() spatial axes). stride,
// padding and dilation hold one value per axis, or one for all, or are empty for the
// defaults (stride = kernel, padding 0, dilation 1). Errors name `op`.
ConvGeometry pool_geometry(const Shape& input_shape, const Shape& kernel, const Shape& stride = {},
                           const Shape& padding = {}, const Shape& dilation = {}, const std::string& op = "pool");

// `g` must be a depthwise NCX geometry as pool_geometry makes it (G = C, Ig = Og = 1).
Variable max_pool(const Variable& x, const ConvGeometry& g);
Variable avg_pool(const Variable& x, const ConvGeometry& g);

// The positions max_pool picks: for each output element, the flat index of its winner in
// its own input plane [X...] (i64, shaped like the output; PyTorch's return_indices).
Tensor max_pool_indices(const Tensor& x, const ConvGeometry& g);

}  // namespace tg::ag
