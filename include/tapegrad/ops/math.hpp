// Eager element-wise math on Tensors: arithmetic with NumPy broadcasting and PyTorch type
// promotion, element-wise functions, comparisons giving bool (b8) masks, where and
// masked_fill. Every function returns a new contiguous tensor except the compound operators
// (+= -= *= /=), which write into their left operand. Inputs may be strided views.
// docs/tensor.md lists every function with its errors; the differentiable counterparts
// (tg::ag) compute their values with these.
#pragma once
#include "tapegrad/core/tensor.hpp"

namespace tg {

// ---- type promotion (the one place it is decided) --------------------------------------
// Tensor ⊕ tensor: float wins over int and bool; among floats the wider (f64 > f32 >
// f16, bf16; f16 with bf16 gives f32); among ints i64 > i32; int wins over bool.
DType result_dtype(DType a, DType b);
// Tensor ⊕ C++ double: a float tensor keeps its dtype; an int or bool tensor keeps its
// dtype (bool: i64) when the scalar is a whole number, else becomes f32 (PyTorch's default).
DType result_dtype(DType a, double scalar);

// ---- arithmetic --------------------------------------------------------------------------
// Broadcasting; integer add/sub/mul wrap around; div is true division (ints give f32).
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor sub(double a, const Tensor& b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor div(double a, const Tensor& b);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator-(double a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator/(double a, const Tensor& b) { return div(a, b); }

// In place: a must already have the broadcast result's shape and a dtype that holds the
// result (a float result does not fit an int tensor); bumps a's version. Returns a.
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, double b);
Tensor& operator-=(Tensor& a, double b);
Tensor& operator*=(Tensor& a, double b);
Tensor& operator/=(Tensor& a, double b);

// ---- element-wise functions ---------------------------------------------------------------
// neg, abs and relu keep int dtypes; the others give f32 for int and bool inputs.
Tensor neg(const Tensor& t);
inline Tensor operator-(const Tensor& t) { return neg(t); }
Tensor abs(const Tensor& t);
Tensor sign(const Tensor& t);  // 1, 0 or −1 (NaN stays NaN)
Tensor exp(const Tensor& t);
Tensor log(const Tensor& t);
Tensor sqrt(const Tensor& t);
Tensor rsqrt(const Tensor& t);
Tensor sin(const Tensor& t);
Tensor cos(const Tensor& t);
Tensor tanh(const Tensor& t);
Tensor sigmoid(const Tensor& t);
Tensor relu(const Tensor& t);  // relu(NaN) = NaN
Tensor leaky_relu(const Tensor& t, double slope);  // t > 0 ? t : slope·t (float only)
Tensor softplus(const Tensor& t);                  // log(1 + e^t), without overflow
// t > 0 ? 1 : t <= 0 ? below : at_nan (float only; the derivative of relu and leaky_relu);
// without at_nan, NaN gives `below` too.
Tensor step(const Tensor& t, double below, double at_nan);
inline Tensor step(const Tensor& t, double below = 0) { return step(t, below, below); }
// grad · step(x, 0, 1) in one pass: relu's gradient, grad where x > 0 or x is NaN and grad·0
// elsewhere (float only; the shapes broadcast, the dtypes promote as mul's).
Tensor relu_grad(const Tensor& grad, const Tensor& x);
Tensor pow(const Tensor& t, double p);
Tensor pow(const Tensor& a, const Tensor& b);  // broadcasting
Tensor clamp(const Tensor& t, double lo, double hi);  // min(max(t, lo), hi); NaN stays NaN

// ---- comparisons and masks ----------------------------------------------------------------
// Broadcasting, compared in the promoted dtype; the result is b8. NaN compares unequal.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
inline Tensor operator==(const Tensor& a, double b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, double b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, double b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, double b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, double b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, double b) { return ge(a, b); }

// Non-zero is true (NaN included); the result is b8. Broadcasting.
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& t);

// mask ? a : b, broadcasting all three; mask must be b8; the result has the promoted dtype.
Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b);
// t with `value` where mask (b8, broadcastable to t's shape) is true; t's shape and dtype.
Tensor masked_fill(const Tensor& t, const Tensor& mask, double value);

}  // namespace tg
