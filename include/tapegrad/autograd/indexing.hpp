// Differentiable indexing and shape ops. Index tensors are plain Tensors (no gradient).
// index_select and index_add are each other's adjoints, as are gather and scatter_add, so
// every backward is another of these ops and second derivatives work. Values come from
// tapegrad/ops/index.hpp and the view methods of Tensor.
#pragma once
#include <vector>

#include "tapegrad/autograd/variable.hpp"

namespace tg::ag {

Variable index_select(const Variable& a, int axis, const Tensor& index);
Variable index_add(const Variable& base, int axis, const Tensor& index, const Variable& src);
Variable gather(const Variable& a, int axis, const Tensor& index);
Variable scatter_add(const Variable& base, int axis, const Tensor& index, const Variable& src);

Variable select(const Variable& a, int axis, std::int64_t index);  // a[..., index, ...], the axis removed
Variable transpose(const Variable& a, int d0, int d1);             // any rank
Variable squeeze(const Variable& a);                                // every size-1 axis removed
Variable squeeze(const Variable& a, int axis);
Variable unsqueeze(const Variable& a, int axis);
Variable flatten(const Variable& a, int start = 0, int end = -1);
Variable stack(const std::vector<Variable>& parts, int axis);

}  // namespace tg::ag
