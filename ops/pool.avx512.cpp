// 2-D max pooling compiled for AVX-512 (F, CD, DQ, BW, VL); see tapegrad/ops/pool_kernel.hpp.
#include "tapegrad/ops/pool_kernel.hpp"

TG_INSTANTIATE_POOL(xsimd::avx512bw, avx512)
