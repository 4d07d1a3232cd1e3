// The element-wise kernels compiled for AVX-512 (F, CD, DQ, BW, VL); see tapegrad/ops/elementwise_kernel.hpp.
#include "tapegrad/ops/elementwise_kernel.hpp"

TG_INSTANTIATE_ELEMENTWISE(xsimd::avx512bw, avx512)
