// Raw reductions for the autograd ops: sums over axes and softmax along one axis.
// Sums accumulate in f64 for every float dtype and round once, in a fixed order, so the
// result does not depend on threads or tiling.
#pragma once
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tg {

// Normalises axes (negative counts from the end) and checks them; empty = all axes.
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op);

// Σ over `axes` (all axes when empty); keepdim keeps them as size 1.
Tensor reduce_sum(const Tensor& x, const std::vector<int>& axes, bool keepdim);

// Sums x down to `shape`, the inverse of broadcasting `shape` up to x.shape().
Tensor sum_to(const Tensor& x, const Shape& shape);

// Numerically stable (max-shifted) softmax and log-softmax along `axis`.
Tensor softmax(const Tensor& x, int axis);
Tensor log_softmax(const Tensor& x, int axis);

}  // namespace tg
