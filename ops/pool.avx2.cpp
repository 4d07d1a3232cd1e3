// 2-D max pooling compiled for AVX2 with FMA; see tapegrad/ops/pool_kernel.hpp.
#include "tapegrad/ops/pool_kernel.hpp"

TG_INSTANTIATE_POOL(xsimd::fma3<xsimd::avx2>, avx2)
