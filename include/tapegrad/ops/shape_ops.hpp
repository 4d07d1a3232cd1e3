// Raw copies between whole tensors and parts of them, for the autograd shape ops.
#pragma once
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tg {

// Joins tensors of one dtype along `axis`; every other dim must agree (the error names the
// part and both shapes).
Tensor cat(const std::vector<Tensor>& parts, int axis);

// A zero tensor of `shape` with `src` written at positions begin, begin+step, ... of `axis`:
// the adjoint of Tensor::slice.
Tensor slice_scatter(const Tensor& src, const Shape& shape, int axis, std::int64_t begin, std::int64_t step);

}  // namespace tg
