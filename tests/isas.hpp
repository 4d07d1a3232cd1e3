// The instruction sets a kernel test runs at: every set this processor has, weakest first.
// The sets it lacks are named in a WARN, so a run on a processor without AVX-512 says that
// it did not test the AVX-512 kernels instead of passing in silence.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "tapegrad/core/simd.hpp"

namespace tg::testing {

inline std::vector<simd::Isa> tested_isas(bool with_scalar = true) {
    const std::vector<simd::Isa> have = simd::available();
    std::vector<simd::Isa> run;
    for (simd::Isa isa : {simd::Isa::scalar, simd::Isa::avx2, simd::Isa::avx512}) {
        if (std::find(have.begin(), have.end(), isa) == have.end())
            WARN(simd::isa_name(isa) << " is not available on this processor: its kernels are not tested in this run");
        else if (with_scalar || isa != simd::Isa::scalar)
            run.push_back(isa);
    }
    return run;
}

// Restores the active instruction set when a test that forces others ends, even on a throw.
struct IsaGuard {
    simd::Isa before = simd::active();
    ~IsaGuard() { simd::force(before); }
};

}  // namespace tg::testing
