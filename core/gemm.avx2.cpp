// tapegrad's SGEMM compiled for AVX2 with FMA; see tapegrad/core/gemm_kernel.hpp.
#include "tapegrad/core/gemm_kernel.hpp"

TG_INSTANTIATE_SGEMM(xsimd::fma3<xsimd::avx2>, avx2)
