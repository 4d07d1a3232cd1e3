// The FMA throughput ceiling of one core: independent chains of vector FMAs in registers
// (no memory traffic), timed on the thread's CPU clock, at each instruction set the CPU has
// (core/simd.hpp). It is the yardstick for the conv and GEMM figures in bench/RESULTS.md: a
// GEMM-bound layer cannot run faster than this, whatever the library.
//     build/release/fma_peak [seconds per set, default 1]
#include <cstdio>
#include <cstdlib>

#include "fma_peak_kernel.hpp"
#include "tapegrad/core/simd.hpp"

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
    if (!(seconds > 0) || seconds > 60) {
        std::fprintf(stderr, "error: seconds per set must be a number in (0, 60], got '%s'\n", argv[1]);
        return 1;
    }
    for (tg::simd::Isa isa : tg::simd::available()) {
        if (isa == tg::simd::Isa::avx512)
            std::printf("avx512 (16 floats per FMA): %.1f GFLOP/s per core\n", fma_peak::avx512(seconds));
        else if (isa == tg::simd::Isa::avx2)
            std::printf("avx2   (8 floats per FMA):  %.1f GFLOP/s per core\n", fma_peak::avx2(seconds));
    }
    return 0;
}
