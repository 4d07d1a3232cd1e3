// The transposing copy compiled for AVX-512 (F, CD, DQ, BW, VL); see tapegrad/core/transpose_kernel.hpp.
#include "tapegrad/core/transpose_kernel.hpp"
#include "tapegrad/core/transpose_kernels.hpp"

TG_INSTANTIATE_TRANSPOSE(xsimd::avx512bw, avx512)
