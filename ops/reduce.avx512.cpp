// The sums compiled for AVX-512 (F, CD, DQ, BW, VL); see tapegrad/ops/reduce_kernel.hpp.
#include "tapegrad/ops/reduce_kernel.hpp"

TG_INSTANTIATE_REDUCE(xsimd::avx512bw, avx512)
