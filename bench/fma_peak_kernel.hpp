// The body of bench/fma_peak.cpp's measurement, compiled once per instruction set
// (bench/fma_peak.avx2.cpp, bench/fma_peak.avx512.cpp).
#pragma once
#include <ctime>

#include <xsimd/xsimd.hpp>

namespace fma_peak {

inline double cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// 12 independent accumulators (more than the FMA latency × the FMA ports), repeated until
// `seconds` of CPU time have passed; GFLOP/s counts 2 flops per lane per FMA.
template <class Arch>
double gflops(double seconds) {
    using V = xsimd::batch<float, Arch>;
    constexpr int chains = 12;
    V acc[chains];
    for (int i = 0; i < chains; ++i) acc[i] = V(1.f + 0.001f * static_cast<float>(i));
    const V b(0.9999f), c(1e-4f);
    const double t0 = cpu_seconds();
    double fmas = 0, t = 0;
    do {
        for (int rep = 0; rep < 1 << 20; ++rep)
#pragma GCC unroll 12
            for (int i = 0; i < chains; ++i) acc[i] = xsimd::fma(acc[i], b, c);
        fmas += double(1 << 20) * chains * static_cast<double>(V::size);
        t = cpu_seconds() - t0;
    } while (t < seconds);
    volatile float sink = 0;  // keeps the chains alive
    for (int i = 0; i < chains; ++i) sink = sink + xsimd::hadd(acc[i]);
    return 2 * fmas / t / 1e9;
}

double avx2(double seconds);
double avx512(double seconds);

}  // namespace fma_peak
