#include "tapegrad/core/simd.hpp"
#include "tapegrad/core/env.hpp"

#include <atomic>
#include <cstdlib>

#include <xsimd/xsimd.hpp>

#include "tapegrad/core/error.hpp"

namespace tg::simd {

namespace {

bool supports(Isa isa) {
    const auto a = xsimd::available_architectures();
    switch (isa) {
        case Isa::scalar: return true;
        case Isa::avx2: return a.fma3_avx2;
        case Isa::avx512: return a.avx512f && a.avx512cd && a.avx512dq && a.avx512bw;
    }
    return false;
}

Isa initial() {
    if (const std::optional<std::string> e = env::choice("TAPEGRAD_SIMD", {"scalar", "avx2", "avx512"})) {
        const Isa want = parse_isa(*e);
        if (!supports(want)) fail("TAPEGRAD_SIMD", "TAPEGRAD_SIMD=", *e, ": this CPU does not support it");
        return want;
    }
    return available().back();
}

std::atomic<Isa>& setting() {
    static std::atomic<Isa> s{initial()};
    return s;
}

}  // namespace

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::scalar: return "scalar";
        case Isa::avx2: return "avx2";
        case Isa::avx512: return "avx512";
    }
    return "?";
}

Isa parse_isa(const std::string& name) {
    for (Isa i : {Isa::scalar, Isa::avx2, Isa::avx512})
        if (name == isa_name(i)) return i;
    fail("simd", "unknown instruction set '", name.substr(0, 40), "' (scalar, avx2 or avx512)");
}

std::vector<Isa> available() {
    std::vector<Isa> v;
    for (Isa i : {Isa::scalar, Isa::avx2, Isa::avx512})
        if (supports(i)) v.push_back(i);
    return v;
}

Isa active() { return setting().load(std::memory_order_relaxed); }

void force(Isa isa) {
    if (!supports(isa)) fail("simd", "this CPU does not support ", isa_name(isa));
    setting().store(isa, std::memory_order_relaxed);
}

}  // namespace tg::simd
