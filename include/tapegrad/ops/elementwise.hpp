// Raw element-wise kernels: NumPy broadcasting for binary ops, the functor map of
// tapegrad/ops/functors.hpp (vector_map; the eager functions of tapegrad/ops/math.hpp use it), affine and
// broadcast_to. f64 computes in f64; f32, f16 and bf16 compute in f32 and round
// once per kernel. Both operands of a binary op must have the same dtype.
#pragma once
#include <string>
#include <vector>

#include "tapegrad/core/simd.hpp"
#include "tapegrad/core/tensor.hpp"
#include "tapegrad/ops/elementwise_kernels.hpp"

namespace tg {

// Fails unless t is a defined float tensor; the error names `op` and which input it is.
void need_float(const Tensor& t, const char* op, const char* which = "input");

// The NumPy broadcast of two shapes; the error names `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& op);

// ReluGrad: b <= 0 ? a·0 : a, relu's gradient a passed where b > 0 or b is NaN (one pass for
// what mul(a, step(b, 0, 1)) does in two, with its values).
enum class BinaryOp { Add, Sub, Mul, Div, ReluGrad };
Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b);


// Element strides of a contiguous tensor of shape `s` read as shape `out` (right-aligned,
// stride 0 on the axes it is broadcast along).
Shape broadcast_strides(const Shape& s, const Shape& out);


// out[k] = f(x[k]) for k < n: the vector loop of the active instruction set for functor F
// (tapegrad/ops/functors.hpp) where F has a batch form for T, then f's scalar form for the rest. Every
// element is bit for bit the scalar f(x[k]) whatever the instruction set.
template <class F, class T>
void vector_map(const F& f, const T* x, T* out, std::int64_t n) {
    std::int64_t k = 0;
    if constexpr (F::template vector<T>) k = simd_ew::map_dispatch<F, T>.active().map(f, x, out, n);
    for (; k < n; ++k) out[k] = f(x[k]);
}

// x·scale + shift
Tensor affine(const Tensor& x, double scale, double shift);

// Repeats x along broadcast axes (NumPy rules) into a fresh contiguous tensor.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

}  // namespace tg
