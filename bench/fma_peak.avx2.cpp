// bench/fma_peak_kernel.hpp compiled for AVX2 + FMA.
#include "fma_peak_kernel.hpp"

double fma_peak::avx2(double seconds) { return gflops<xsimd::fma3<xsimd::avx2>>(seconds); }
