// Raw per-channel kernels of batch normalisation, for x [N, C, X...] (or [N, C]) read as
// [N, C, S] with S = ∏X: every (n, c) is one contiguous run of S values, and the loops walk
// those runs, one channel per thread. f64 computes in f64; f32, f16 and bf16 compute in f32
// and round once. Sums accumulate per run in the compute type, the runs in f64, in a fixed
// order (the result does not depend on the thread count).
//
// tapegrad/autograd/batch_norm.hpp puts them on the tape; nn::BatchNorm uses them.
#pragma once
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tg {

// Per channel c: the mean and the biased variance (Σ(x − mean)²/n, two passes) of x.
struct ChannelMoments {
    std::vector<double> mean, var;
};
ChannelMoments channel_moments(const Tensor& x);

// y = (x − center[c])·scale[c] + shift[c] (scale holds C values; an empty shift or center
// is 0); with `relu`, relu(y) in the same pass (fn::Relu's rule: y < 0 becomes 0).
Tensor channel_affine(const Tensor& x, const std::vector<double>& scale, const std::vector<double>& shift,
                      const std::vector<double>& center = {}, bool relu = false);

// The backward kernels below take `relu_out`, the output of a fused ReLU (channel_affine
// with relu), when defined: g is then first taken through that ReLU (0 where relu_out <= 0,
// g where relu_out > 0 or is NaN, as ag::relu's backward), in the same pass.

// Per channel c: Σ g and Σ g·(x − center[c]) over the channel's values (g and x of one
// shape; an empty center is 0).
struct ChannelSums {
    std::vector<double> g, gx;
};
ChannelSums channel_sums(const Tensor& g, const Tensor& x, const std::vector<double>& center = {},
                         const Tensor& relu_out = {});

// The gradient of batch normalisation in training mode with respect to its input, given
// the upstream gradient g, the input x, the batch statistics mean[c] and invstd[c] =
// 1/√(var[c] + eps), weight[c], and the sums Σg and Σg·x̂ over the channel, with
// x̂ = (x − mean)·invstd (Σg·x̂ = invstd·channel_sums(g, x, mean).gx):
//   dx = weight·invstd·(g − Σg/n − x̂·Σg·x̂/n)
Tensor batch_norm_input_grad(const Tensor& g, const Tensor& x, const std::vector<double>& mean,
                             const std::vector<double>& invstd, const std::vector<double>& weight,
                             const std::vector<double>& sum_g, const std::vector<double>& sum_gxhat,
                             const Tensor& relu_out = {});

}  // namespace tg
