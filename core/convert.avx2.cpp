// The bulk 16-bit conversions compiled for AVX2 with FMA and F16C; see tapegrad/core/convert_kernel.hpp.
#include "tapegrad/core/convert_kernel.hpp"

TG_INSTANTIATE_CONVERT(xsimd::fma3<xsimd::avx2>, avx2)
