// The FMA throughput ceiling of one core: independent chains of vector FMAs in registers
// (no memory traffic), timed on the thread's CPU clock, at each instruction set the CPU has
// (tapegrad/core/simd.hpp). It is the yardstick for the conv and GEMM figures in bench/RESULTS.md: a
// GEMM-bound layer cannot run faster than this, whatever the library.
//     build/release/fma_peak [--seconds S]   (S per instruction set, default 1)
#include <cstdio>
#include <cstdlib>

#include "cli/options.hpp"
#include "fma_peak_kernel.hpp"
#include "tapegrad/core/simd.hpp"

int main(int argc, char** argv) {
    double seconds = 1.0;
    tg::cli::Parser cl("fma_peak", "The FMA throughput ceiling of one core at each instruction set the CPU has");
    cl.option("--seconds", seconds, "seconds per instruction set", 0.001, 60).type("S");
    try {
        if (!cl.parse(argc, argv)) return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
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
