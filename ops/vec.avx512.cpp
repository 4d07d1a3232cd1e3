// tapegrad/ops/vec.hpp compiled for AVX-512.
#include "tapegrad/ops/vec_kernel.hpp"

TG_VEC_INSTANTIATE(xsimd::avx512bw, avx512)
