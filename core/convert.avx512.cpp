// The bulk 16-bit conversions compiled for AVX-512 (F, CD, DQ, BW, VL); see tapegrad/core/convert_kernel.hpp.
#include "tapegrad/core/convert_kernel.hpp"

TG_INSTANTIATE_CONVERT(xsimd::avx512bw, avx512)
