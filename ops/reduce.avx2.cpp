// The sums compiled for AVX2 with FMA; see tapegrad/ops/reduce_kernel.hpp.
#include "tapegrad/ops/reduce_kernel.hpp"

TG_INSTANTIATE_REDUCE(xsimd::fma3<xsimd::avx2>, avx2)
