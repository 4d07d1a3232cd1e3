// The small-channel convolution kernels compiled for AVX2 with FMA; see tapegrad/ops/conv_small_kernel.hpp.
#include "tapegrad/ops/conv_small_kernel.hpp"

TG_INSTANTIATE_SMALL(xsimd::fma3<xsimd::avx2>, avx2)
