// The small-channel convolution kernels compiled for AVX-512 (F, CD, DQ, BW, VL); see tapegrad/ops/conv_small_kernel.hpp.
#include "tapegrad/ops/conv_small_kernel.hpp"

TG_INSTANTIATE_SMALL(xsimd::avx512bw, avx512)
