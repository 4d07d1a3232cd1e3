// The element-wise kernels compiled for AVX2 with FMA; see tapegrad/ops/elementwise_kernel.hpp.
#include "tapegrad/ops/elementwise_kernel.hpp"

TG_INSTANTIATE_ELEMENTWISE(xsimd::fma3<xsimd::avx2>, avx2)
