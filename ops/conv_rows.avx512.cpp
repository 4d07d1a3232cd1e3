// The channel-row convolution kernels compiled for AVX-512 (F, CD, DQ, BW, VL); see tapegrad/ops/conv_rows_kernel.hpp.
#include "tapegrad/ops/conv_rows_kernel.hpp"

TG_INSTANTIATE_ROWS(xsimd::avx512bw, avx512)
