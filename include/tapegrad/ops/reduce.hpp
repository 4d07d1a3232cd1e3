// Raw reductions for the autograd ops: sums over axes and softmax along one axis.
// Sums accumulate in f64 for every float dtype and round once, in a fixed order, so the
// result does not depend on threads or tiling.
#pragma once
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tg {

// Normalises axes (negative counts from the end) and checks them; empty = all axes.
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op);

// Σ over `axes` (all axes when empty) of a float tensor; keepdim keeps them as size 1. The
// kernel behind sum() for floats.
Tensor reduce_sum(const Tensor& x, const std::vector<int>& axes, bool keepdim);

// ---- reductions of the everyday tensor API --------------------------------------------------
// Over `axes` (empty = all; negative counts from the end; an axis given twice is an error),
// keepdim keeping them as size 1. Floats accumulate in f64 and round once to the input's
// dtype. Integer and bool inputs: sum and prod give i64 (wrapping), max/min keep the dtype,
// mean/var/std/logsumexp need a float tensor.

Tensor sum(const Tensor& x, const std::vector<int>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int>& axes = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const std::vector<int>& axes = {}, bool keepdim = false);
// Variance Σ(x − mean)² / (n − correction): correction = 1 is the unbiased (sample) variance,
// PyTorch's default; 0 the population variance. n − correction <= 0 gives inf or NaN, as PyTorch.
Tensor var(const Tensor& x, const std::vector<int>& axes = {}, int correction = 1, bool keepdim = false);
// Spelled tg::std (with `using namespace tg`, a bare std(...) is ambiguous with namespace std).
Tensor std(const Tensor& x, const std::vector<int>& axes = {}, int correction = 1, bool keepdim = false);
// log Σ exp(x), computed as m + log Σ exp(x − m) with m the maximum (±inf rows give m).
Tensor logsumexp(const Tensor& x, const std::vector<int>& axes = {}, bool keepdim = false);

// The largest (smallest) element along one axis and its index (i64). Ties: the first index
// wins. NaN: a NaN wins over every number (the first NaN), as in PyTorch. An empty axis is an
// error.
struct ValuesIndices {
    Tensor values, indices;
};
ValuesIndices max(const Tensor& x, int axis, bool keepdim = false);
ValuesIndices min(const Tensor& x, int axis, bool keepdim = false);
Tensor max(const Tensor& x);  // over all elements, a 0-d tensor (NaN if any is NaN)
Tensor min(const Tensor& x);
Tensor argmax(const Tensor& x, int axis, bool keepdim = false);  // max(x, axis).indices
Tensor argmin(const Tensor& x, int axis, bool keepdim = false);

// Sums x down to `shape`, the inverse of broadcasting `shape` up to x.shape().
Tensor sum_to(const Tensor& x, const Shape& shape);

// Numerically stable (max-shifted) softmax and log-softmax along `axis`.
Tensor softmax(const Tensor& x, int axis);
Tensor log_softmax(const Tensor& x, int axis);

}  // namespace tg
