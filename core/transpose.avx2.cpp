// The transposing copy compiled for AVX2 with FMA; see tapegrad/core/transpose_kernel.hpp.
#include "tapegrad/core/transpose_kernel.hpp"
#include "tapegrad/core/transpose_kernels.hpp"

TG_INSTANTIATE_TRANSPOSE(xsimd::fma3<xsimd::avx2>, avx2)
