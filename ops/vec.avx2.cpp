// tapegrad/ops/vec.hpp compiled for AVX2 with FMA.
#include "tapegrad/ops/vec_kernel.hpp"

TG_VEC_INSTANTIATE(xsimd::fma3<xsimd::avx2>, avx2)
