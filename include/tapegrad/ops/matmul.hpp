// Matrix product for the autograd ops, on tg::gemm.
#pragma once
#include "tapegrad/core/tensor.hpp"

namespace tg {

// [M, K] · [K, N] -> [M, N], or batched: [..., M, K] · [..., K, N] -> [..., M, N] with the
// leading dims broadcast (NumPy rules, as torch.matmul for operands of rank >= 2). f16/bf16
// are widened to f32 and rounded once. The error names both shapes.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace tg
