// Raw element-wise kernels for the autograd ops: NumPy broadcasting for binary ops, unary
// maps, and broadcast_to. f64 computes in f64; f32, f16 and bf16 compute in f32 and round
// once per kernel. Both operands of a binary op must have the same dtype.
#pragma once
#include <string>

#include "tapegrad/core/tensor.hpp"

namespace tg {

// Fails unless t is a defined float tensor; the error names `op` and which input it is.
void need_float(const Tensor& t, const char* op, const char* which = "input");

// The NumPy broadcast of two shapes; the error names `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& op);

enum class BinaryOp { Add, Sub, Mul, Div };
Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b);

enum class UnaryOp {
    Neg,
    Exp,
    Log,
    Relu,
    LeakyRelu,  // param = negative slope
    Sigmoid,
    Tanh,
    Softplus,   // log(1 + e^x), computed without overflow
    Step,       // 1 where x > 0, else param (the mask of relu / leaky_relu)
    Abs,
};
Tensor unary_op(UnaryOp op, const Tensor& x, double param = 0);

// x·scale + shift
Tensor affine(const Tensor& x, double scale, double shift);

// Repeats x along broadcast axes (NumPy rules) into a fresh contiguous tensor.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

}  // namespace tg
