// Differentiable reductions beyond sum and mean (tapegrad/autograd/ops.hpp): their values come from
// the eager reductions of tapegrad/ops/reduce.hpp (one implementation), their backward is written with
// differentiable ops, so second derivatives work (except prod at exact zeros, see below).
// Axes and keepdim as in tapegrad/ops/reduce.hpp.
#pragma once
#include <vector>

#include "tapegrad/autograd/variable.hpp"

namespace tg::ag {

// The gradient of x_i is the product of the other elements. Without zeros in a reduced row it
// is written as g·prod/x_i (differentiable again); a row with a zero gets the exact products of
// the others as a constant (first derivatives exact, second derivatives taken as zero there).
Variable prod(const Variable& a, const std::vector<int>& axes = {}, bool keepdim = false);
// correction 1 = unbiased (PyTorch's default), 0 = population. d var = 2(x − mean)/(n − c).
Variable var(const Variable& a, const std::vector<int>& axes = {}, int correction = 1, bool keepdim = false);
Variable std(const Variable& a, const std::vector<int>& axes = {}, int correction = 1, bool keepdim = false);
// d logsumexp = softmax over the reduced axes.
Variable logsumexp(const Variable& a, const std::vector<int>& axes = {}, bool keepdim = false);

// Values and the i64 indices of the winners along one axis (ties: first index; NaN wins). The
// gradient goes to the winner only (scattered through the indices), as PyTorch's max(dim).
struct ValuesIndices {
    Variable values;
    Tensor indices;
};
ValuesIndices max(const Variable& a, int axis, bool keepdim = false);
ValuesIndices min(const Variable& a, int axis, bool keepdim = false);
// Over all elements: a 0-d result whose gradient goes to the first winner (in C order).
Variable max(const Variable& a);
Variable min(const Variable& a);

}  // namespace tg::ag
