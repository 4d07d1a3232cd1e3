// Matrix product for the autograd ops, on tg::gemm.
#pragma once
#include "tapegrad/core/tensor.hpp"

namespace tg {

// [M, K] · [K, N] -> [M, N], or batched: [..., M, K] · [..., K, N] -> [..., M, N] with the
// leading dims broadcast (NumPy rules, as torch.matmul for operands of rank >= 2). f16/bf16
// are widened to f32 and rounded once. The error names both shapes.
Tensor matmul(const Tensor& a, const Tensor& b);

// A linear layer: x [N, in] · Wᵀ (W [out, in]) + bias [out] (if defined), and with `relu`
// relu of it, as torch.nn.functional.linear (then relu). The bias and the ReLU are added in
// one pass over the product (f16/bf16: after it is rounded, as tg::add and tg::relu would);
// the same bits as matmul(x, Wᵀ), then tg::add of the bias, then tg::relu. Errors name the
// operand (input, weight, bias) and its shape.
Tensor linear(const Tensor& x, const Tensor& W, const Tensor& bias = {}, bool relu = false);

}  // namespace tg
