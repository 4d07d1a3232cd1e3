// GELU and its derivatives, element-wise, on raw tensors (float; computed in f64 and rounded
// once to the input's dtype).
//   exact: gelu(x) = x·Φ(x), Φ(x) = (1 + erf(x/√2))/2      (PyTorch's approximate = "none")
//   tanh:  gelu(x) = x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))/2  (approximate = "tanh")
#pragma once
#include "tapegrad/core/tensor.hpp"

namespace tg {

Tensor gelu(const Tensor& x, bool tanh_approximation = false);
// The first (order 1) or second (order 2) derivative of gelu at x.
Tensor gelu_derivative(const Tensor& x, bool tanh_approximation, int order);

}  // namespace tg
