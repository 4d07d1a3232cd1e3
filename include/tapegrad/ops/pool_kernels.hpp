// The table of the 2-D max-pooling kernel, one per instruction set and element type (filled
// by ops/pool.avx2.cpp, ops/pool.avx512.cpp, and plainly in ops/pool.cpp for Isa::scalar),
// reached through simd::Dispatch. Every table gives the same values and indices.
#pragma once
#include <algorithm>
#include <cstdint>

#include "tapegrad/core/simd.hpp"
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg::simd_pool {

// One 2-D max pooling: planes of H × W to OH × OW, kernel KH × KW, strides, dilations and
// begin pads per axis.
struct Pool2d {
    std::int64_t H, W, OH, OW, KH, KW, SH, SW, DH, DW, PH, PW;
};

// A band of input rows staged phase-major along the last axis for the vector kernels (of at
// most 16 lanes): row iy's phase φ < SW is a row of L elements at ((iy − iy0)·SW + φ)·L
// holding `pad` zeros, then x[iy, φ], x[iy, φ + SW], ..., then zeros; tap kx of the outputs
// ox, ox + 1, ... reads consecutive elements of one phase row, inside it for every output
// vector. A band holds the input rows of `band` output rows, about 64 KiB of f32 at most.
struct Stage {
    std::int64_t pad = 0, L = 0, band = 1, elems = 0;
    explicit Stage(const Pool2d& p) {
        constexpr std::int64_t kMaxLanes = 16, kBandElems = 16384;
        const std::int64_t S = p.SW, OWc = (p.OW + kMaxLanes - 1) / kMaxLanes * kMaxLanes;
        const std::int64_t qmin = floor_div(-p.PW, S), qmax = floor_div((p.KW - 1) * p.DW - p.PW, S);
        pad = std::max<std::int64_t>(0, -qmin);
        L = pad + std::max((p.W + S - 1) / S, OWc + std::max<std::int64_t>(qmax, 0));
        auto in_rows = [&](std::int64_t b) { return std::min(p.H, (b - 1) * p.SH + (p.KH - 1) * p.DH + 1); };
        while (band < p.OH && in_rows(band + 1) * S * L <= kBandElems) ++band;
        elems = in_rows(band) * S * L;
    }
};

template <class T>
struct Kernels {
    // Planes [0, planes) of x to y and idx (tapegrad/ops/pool.hpp), on the calling thread;
    // `stage` holds Stage(p).elems elements of scratch.
    void (*max_pool_2d)(const Pool2d& p, const T* x, T* y, std::int64_t* idx, std::int64_t planes, T* stage);
};

extern const Kernels<float> f32_scalar, f32_avx2, f32_avx512;
extern const Kernels<double> f64_scalar, f64_avx2, f64_avx512;

}  // namespace tg::simd_pool
