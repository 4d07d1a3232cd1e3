// Tensor factories: new contiguous tensors, default dtype f32 (kDefaultDType).
//
//   tg::zeros({2, 3})                  tg::ones({4}, DType::f64)      tg::full({2}, 0.5)
//   tg::randn({2, 3})                  standard normal, from default_generator()
//   tg::rand({2, 3}, DType::f64, gen)  uniform in [0, 1), from the Generator `gen`
//   tg::arange(0, 10, 2)               [0, 2, 4, 6, 8]; tg::arange(5) is [0, 1, 2, 3, 4]
//
// The random ones draw in C order (randn: Box-Muller pairs), so a seed fixes every value;
// they need a float dtype. See tapegrad/core/random.hpp for the generator and thread safety.
#pragma once
#include "tapegrad/core/random.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tg {

Tensor zeros(const Shape& shape, DType dtype = kDefaultDType);
Tensor ones(const Shape& shape, DType dtype = kDefaultDType);
Tensor full(const Shape& shape, double value, DType dtype = kDefaultDType);

// Standard normal N(0, 1).
Tensor randn(const Shape& shape, DType dtype = kDefaultDType);
Tensor randn(const Shape& shape, DType dtype, Generator& gen);
Tensor randn(const Shape& shape, Generator& gen, DType dtype = kDefaultDType);

// Uniform on [0, 1).
Tensor rand(const Shape& shape, DType dtype = kDefaultDType);
Tensor rand(const Shape& shape, DType dtype, Generator& gen);
Tensor rand(const Shape& shape, Generator& gen, DType dtype = kDefaultDType);

// start, start + step, ... while < end (> end for a negative step): ceil((end - start) / step)
// values, each computed as start + i·step. step 0, a step pointing away from end, or a
// non-finite argument is an Error naming the values.
Tensor arange(double start, double end, double step = 1, DType dtype = kDefaultDType);
Tensor arange(double end, DType dtype = kDefaultDType);  // 0, 1, ..., end - 1

}  // namespace tg
