// The channel-row convolution kernels compiled for AVX2 + FMA; see tapegrad/ops/conv_rows_kernel.hpp.
#include "tapegrad/ops/conv_rows_kernel.hpp"

TG_INSTANTIATE_ROWS(xsimd::fma3<xsimd::avx2>, avx2)
