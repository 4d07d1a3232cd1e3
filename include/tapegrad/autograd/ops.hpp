// Differentiable ops on Variables. Each is one function in ops.cpp that computes the value
// with a raw kernel and records its backward right next to it; the backward is written with
// these same ops, so gradients can be differentiated again (create_graph).
//
// Binary ops broadcast by NumPy rules (errors name both shapes) and need one dtype.
// The conv family is in tapegrad/autograd/conv.hpp.
#pragma once
#include <vector>

#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg::ag {

// Element-wise arithmetic, broadcasting.
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
Variable neg(const Variable& a);
Variable affine(const Variable& a, double scale, double shift = 0);  // a·scale + shift
inline Variable scale(const Variable& a, double s) { return affine(a, s, 0); }

inline Variable operator+(const Variable& a, const Variable& b) { return add(a, b); }
inline Variable operator-(const Variable& a, const Variable& b) { return sub(a, b); }
inline Variable operator*(const Variable& a, const Variable& b) { return mul(a, b); }
inline Variable operator/(const Variable& a, const Variable& b) { return div(a, b); }
inline Variable operator-(const Variable& a) { return neg(a); }
inline Variable operator*(const Variable& a, double s) { return affine(a, s, 0); }
inline Variable operator*(double s, const Variable& a) { return affine(a, s, 0); }
inline Variable operator+(const Variable& a, double s) { return affine(a, 1, s); }
inline Variable operator+(double s, const Variable& a) { return affine(a, 1, s); }
inline Variable operator-(const Variable& a, double s) { return affine(a, 1, -s); }
inline Variable operator-(double s, const Variable& a) { return affine(a, -1, s); }
// Divisions by and of a constant: true divisions (not a multiplication by 1/s); the
// gradient flows to the Variable only.
Variable div(const Variable& a, double s);
Variable div(double s, const Variable& a);
inline Variable operator/(const Variable& a, double s) { return div(a, s); }
inline Variable operator/(double s, const Variable& a) { return div(s, a); }

// Element-wise functions.
Variable exp(const Variable& a);
Variable log(const Variable& a);
Variable relu(const Variable& a);
// relu's backward as an op: g where x > 0 or x is NaN, g·0 elsewhere (x a constant; the
// output of the ReLU serves as well as its input). For ops that fuse a ReLU (conv, batch_norm).
Variable relu_grad(const Variable& g, const Tensor& x);
Variable leaky_relu(const Variable& a, double slope = 0.01);
Variable sigmoid(const Variable& a);
Variable tanh(const Variable& a);
Variable softplus(const Variable& a);  // log(1 + e^a)
// x·Φ(x), or with tanh_approximation PyTorch's approximate = "tanh" form (tapegrad/ops/activation.hpp);
// differentiable twice.
Variable gelu(const Variable& a, bool tanh_approximation = false);
Variable sqrt(const Variable& a);      // √a (NaN below 0; its gradient is infinite at 0)
Variable rsqrt(const Variable& a);     // 1/√a
// |a|; its gradient is sign(a)·g with the subgradient 0 at a = 0 (as PyTorch).
Variable abs(const Variable& a);
Variable sin(const Variable& a);
Variable cos(const Variable& a);
Variable pow(const Variable& a, double p);           // gradient p·a^(p−1)·g
// a^b, broadcasting; ∂/∂a = b·a^(b−1)·g, ∂/∂b = a^b·log(a)·g (NaN for a < 0, as PyTorch
// gives it; at a = 0 the log is −Inf).
Variable pow(const Variable& a, const Variable& b);
// min(max(a, lo), hi); gradient g where lo ≤ a ≤ hi (bounds inclusive, as PyTorch), else 0.
Variable clamp(const Variable& a, double lo, double hi);
// mask ? a : b (mask a b8 Tensor; all three broadcast); the gradient goes to a where the
// mask is true and to b where it is false, summed back to their shapes.
Variable where(const Tensor& mask, const Variable& a, const Variable& b);
// a with `value` where mask (b8, broadcastable to a's shape) is true; gradient g where false.
Variable masked_fill(const Variable& a, const Tensor& mask, double value);

// Shapes. reshape keeps the element count; permute takes a permutation of the axes;
// slice takes [begin, end) with a step along one axis; cat joins along one axis.
Variable reshape(const Variable& a, const Shape& shape);
Variable permute(const Variable& a, const std::vector<int>& axes);
Variable transpose(const Variable& a);  // the two axes of a matrix swapped
Variable slice(const Variable& a, int axis, std::int64_t begin, std::int64_t end, std::int64_t step = 1);
Variable cat(const std::vector<Variable>& parts, int axis);
Variable broadcast_to(const Variable& a, const Shape& shape);
Variable sum_to(const Variable& a, const Shape& shape);  // the adjoint of broadcast_to

// Reductions; empty axes = all axes.
Variable sum(const Variable& a, const std::vector<int>& axes = {}, bool keepdim = false);
Variable mean(const Variable& a, const std::vector<int>& axes = {}, bool keepdim = false);
Variable softmax(const Variable& a, int axis = -1);
Variable log_softmax(const Variable& a, int axis = -1);

// [M, K] · [K, N], or batched [..., M, K] · [..., K, N] with broadcast leading dims
Variable matmul(const Variable& a, const Variable& b);
// x [N, in] · Wᵀ + bias, with `relu` relu of it: one recorded op (tg::linear), the ReLU's
// gradient taken from the op's output; the same values and gradients as
// relu(add(matmul(x, transpose(W)), bias)), with fewer passes. nn::Linear runs on it.
Variable linear(const Variable& x, const Variable& W, const Variable& bias = {}, bool relu = false);

// Losses, averaged over their elements (a scalar).
Variable mse_loss(const Variable& pred, const Variable& target);
// logits [N, C, d...], labels [N, d...] of i32/i64 class indices in [0, C).
Variable cross_entropy(const Variable& logits, const Variable& labels);
// Stable form: softplus(x) − x·t, averaged.
Variable bce_with_logits(const Variable& logits, const Variable& target);

// y + b[c] on the channel axis of a conv result in `layout` (b has shape [C]).
Variable add_channel_bias(const Variable& y, const Variable& b, Layout layout);

}  // namespace tg::ag
