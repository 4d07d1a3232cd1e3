// tapegrad's SGEMM compiled for AVX-512 (F, CD, DQ, BW, VL); see tapegrad/core/gemm_kernel.hpp.
#include "tapegrad/core/gemm_kernel.hpp"

TG_INSTANTIATE_SGEMM(xsimd::avx512bw, avx512)
