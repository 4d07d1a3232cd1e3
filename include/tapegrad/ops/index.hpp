// Indexing by index tensors and joining, on raw tensors (PyTorch semantics). Index tensors
// are i32 or i64; a negative or out-of-range index is an error naming the function, the
// index value and the valid range. Every result is a new contiguous tensor.
#pragma once
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tg {

// out = t with axis `axis` replaced by the rows index[0], index[1], ... (index is 1-D).
Tensor index_select(const Tensor& t, int axis, const Tensor& index);
// The adjoint of index_select: t plus src added at rows index[i] of `axis` (src has t's
// shape with index.numel() on `axis`; repeated indices add up).
Tensor index_add(const Tensor& t, int axis, const Tensor& index, const Tensor& src);
// out[..., i, ...] = t[..., index[..., i, ...], ...] along `axis`: index has t's rank, its
// size along every other axis at most t's; out has index's shape.
Tensor gather(const Tensor& t, int axis, const Tensor& index);
// The adjoint of gather: t plus src[..., i, ...] added at t[..., index[..., i, ...], ...]
// (index has src's rank and at most src's size on every axis, and at most t's on the others).
Tensor scatter_add(const Tensor& t, int axis, const Tensor& index, const Tensor& src);
// Stacks tensors of one shape and dtype along a new axis `axis` (in [-rank-1, rank]).
Tensor stack(const std::vector<Tensor>& parts, int axis);

}  // namespace tg
