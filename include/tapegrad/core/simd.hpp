// Which SIMD instruction set the hand-written kernels run on, decided once at run time
// from xsimd's CPU detection, so that one binary uses AVX-512 or AVX2 as the machine
// allows. Kernels written with xsimd are compiled once per set (files named *.avx2.cpp and
// *.avx512.cpp get the matching compiler flags); their callers switch on active().
#pragma once
#include <string>
#include <vector>

namespace tg::simd {

enum class Isa {
    scalar,  // no AVX2: plain C++ loops, and OpenBLAS for GEMM
    avx2,    // AVX2 + FMA
    avx512,  // AVX-512 F, CD, DQ, BW, VL
};

const char* isa_name(Isa isa);
Isa parse_isa(const std::string& name);  // "scalar", "avx2" or "avx512"; fails otherwise

// The sets this CPU (and OS) supports, weakest first; always holds Isa::scalar.
std::vector<Isa> available();
// The set in use: the best available one, or the one given by force() or by the
// TAPEGRAD_SIMD environment variable (read once).
Isa active();
// Runs every dispatched kernel on `isa` from now on (tests use it to reach each set).
// Fails if the CPU lacks it. Not meant to change while kernels run in other threads.
void force(Isa isa);

}  // namespace tg::simd
