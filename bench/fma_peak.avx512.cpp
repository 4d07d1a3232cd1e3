// bench/fma_peak_kernel.hpp compiled for AVX-512.
#include "fma_peak_kernel.hpp"

double fma_peak::avx512(double seconds) { return gflops<xsimd::avx512bw>(seconds); }
