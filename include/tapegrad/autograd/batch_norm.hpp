// Batch normalisation on the tape as fused ops: one recorded op per call, computed by the
// per-channel kernels of tapegrad/ops/batch_norm.hpp (x [N, C] or [N, C, X...], channel axis 1;
// weight, bias, scale and shift [C]). nn::BatchNorm (tapegrad/nn/layers.hpp) is built on them.
//
//   batch_norm      training mode, with the batch's statistics:
//                     y = (x − mean)/√(var + eps)·weight[c] + bias[c]
//                   mean and the biased var per channel over N and the spatial axes. The
//                   backward is two passes (Σg and Σg·x̂, then dx = weight·invstd·(g − Σg/n −
//                   x̂·Σg·x̂/n)); when the backward is itself recorded (create_graph) it is
//                   the same formula written with the differentiable ops, recomputing the
//                   statistics from x, so gradients of any order flow.
//   channel_affine  y = (x − center[c])·scale[c] + shift[c] with a constant center
//                   (evaluation mode: center = running mean, scale = weight/√(running var
//                   + eps)); its backward is written with the differentiable ops.
#pragma once
#include "tapegrad/autograd/variable.hpp"

namespace tg::ag {

// weight and bias may be undefined (no scale, no shift). When given, *batch_mean and
// *batch_var receive the batch mean and biased variance per channel ([C], x's dtype). With
// `relu`, the result is relu(batch_norm(...)) as one op: the ReLU is applied in the
// normalisation's pass and its gradient in the backward's passes (the values and gradients
// of ag::relu after ag::batch_norm).
Variable batch_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps = 1e-5,
                    Tensor* batch_mean = nullptr, Tensor* batch_var = nullptr, bool relu = false);

// shift and center may be undefined (0).
Variable channel_affine(const Variable& x, const Variable& scale, const Variable& shift, const Tensor& center = {});

}  // namespace tg::ag
