// The xsimd body of tapegrad/ops/conv_rows_kernels.hpp, templated on the architecture;
// included only by the per-architecture translation units (ops/conv_rows.avx2.cpp,
// ops/conv_rows.avx512.cpp).
//
// A register tile holds J results × NV vectors of channels (J·NV ≤ 24 sums and NV ≤ 4 with
// 32 vector registers, ≤ 12 and NV ≤ 3 with 16). Each (tap, reduction channel) step loads NV weight vectors once
// and feeds each of the J results' broadcast input: J broadcasts and NV loads for J·NV FMAs.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "tapegrad/ops/conv_rows_kernels.hpp"

namespace tg::simd_rows::kernel {

// f64 keeps to tiles of ≤ 12 sums and ≤ 2 vectors at every instruction set: each (J, NV) is
// one instance of each kernel, and f64 (gradient checks, not training speed) at f32's 50
// instances per kernel made this file the slowest of the library to compile (24 s under the
// sanitizers, once per build: 100 -> 68 tiles per kernel at AVX-512).
template <class Arch, class T>
inline constexpr int kSums = std::is_same_v<T, float> && xsimd::batch<T, Arch>::size * sizeof(T) >= 64 ? 24 : 12;
// Channel vectors per tile: with 16 registers, 12 sums, 3 weight vectors and a broadcast
// (4 would spill: AVX2 dcgan_g3 forward 15.8 -> 12.7 ms, vol3d 3.35 -> 2.69 ms).
template <class Arch, class T>
inline constexpr int kMaxNV = !std::is_same_v<T, float> ? 2 : kSums<Arch, T> == 24 ? 4 : 3;

// The loops over J and NV are unrolled by pragma (GCC leaves a 24-long loop rolled, and its
// sums in memory: a 1-D layer's 24 × 1 tile ran at a quarter of the speed); the reduction
// loop twice (vol3d 1 thread, AVX-512: transposed 2.07 -> 1.82 ms, forward 1.92 -> 1.79).
template <class Arch, class T, int J, int NV>
void tile(const Span<T>& a, std::int64_t j0, std::int64_t c0) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t L = V::size;
    V acc[J][NV];
#pragma GCC unroll 24
    for (int j = 0; j < J; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[j][v] = V(T(0));
    // Result j's input as x86 addresses it in one operand: base j / 9 plus one of s, 3s, 5s,
    // 7s scaled by 1, 2, 4 or 8 (offsets 0-8 of a base): 3 bases and 4 strides in registers,
    // not 24 pointers (which spilled: a 21 × 1 tile ran at 60% of the FMA peak).
    const std::int64_t s1 = a.istep, s3 = 3 * s1, s5 = 5 * s1, s7 = 7 * s1;
    for (std::int64_t t = 0; t < a.ntaps; ++t) {
        const T* in = a.in[t] + j0 * a.istep;
        const T* w = a.w[t] + c0;
        const T* base[3] = {in, in + 9 * s1, in + 18 * s1};
#pragma GCC unroll 2
        for (std::int64_t r = 0; r < a.nred; ++r, w += a.cp) {
            V wv[NV];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) wv[v] = V::load_aligned(w + v * L);
#pragma GCC unroll 24
            for (int j = 0; j < J; ++j) {
                const T* b0 = base[j / 9] + r;
                const int k = j % 9;
                const T* p = k == 0 ? b0 : k == 1 ? b0 + s1 : k == 2 ? b0 + 2 * s1 : k == 3 ? b0 + s3 : k == 4 ? b0 + 4 * s1
                           : k == 5 ? b0 + s5 : k == 6 ? b0 + 2 * s3 : k == 7 ? b0 + s7 : b0 + 8 * s1;
                const V b(*p);
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) acc[j][v] = xsimd::fma(b, wv[v], acc[j][v]);
            }
        }
    }
    T* out = a.out + j0 * a.ostep + c0;
#pragma GCC unroll 24
    for (int j = 0; j < J; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[j][v].store_unaligned(out + j * a.ostep + v * L);
}

using simd::with_size;

// The register tiles of both kernels: channels in blocks of kMaxNV vectors (the last as wide
// as what is left); in each block, n rows of sums (results, or reduction channels) in as few
// tiles as the sums allow, all of about one size:
//   f(std::integral_constant<int, rows>, std::integral_constant<int, vectors>, first row, first channel).
template <class Arch, class T, class F>
void for_each_tile(std::int64_t cp, std::int64_t n, F&& f) {
    constexpr std::int64_t L = xsimd::batch<T, Arch>::size;
    for (std::int64_t c0 = 0; c0 < cp;) {
        const std::int64_t nv = std::min<std::int64_t>(kMaxNV<Arch, T>, (cp - c0) / L);
        with_size<kMaxNV<Arch, T>>(nv, [&](auto NV) {
            constexpr int MAX = kSums<Arch, T> / decltype(NV)::value;
            const std::int64_t tiles = (n + MAX - 1) / MAX;
            for (std::int64_t t = 0; t < tiles; ++t) {
                const std::int64_t i0 = n * t / tiles;
                with_size<MAX>(n * (t + 1) / tiles - i0, [&](auto B) { f(B, NV, i0, c0); });
            }
        });
        c0 += nv * L;
    }
}

template <class Arch, class T>
void span(const Span<T>& a) {
    for_each_tile<Arch, T>(a.cp, a.n, [&](auto J, auto NV, std::int64_t j0, std::int64_t c0) {
        tile<Arch, T, decltype(J)::value, decltype(NV)::value>(a, j0, c0);
    });
}

// The weight gradient's tile: RB reduction channels × NV vectors of result channels, summed
// over rows [row0, row1) in registers, on top of dw's values unless `first`; per position NV
// loads of u and RB broadcasts.
template <class Arch, class T, int RB, int NV>
void grad_tile(const GradSpan<T>& a, std::int64_t row0, std::int64_t row1, bool first, std::int64_t r0, std::int64_t c0) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t L = V::size;
    V acc[RB][NV];
    T* dw = a.dw + r0 * a.cp + c0;
#pragma GCC unroll 24
    for (int r = 0; r < RB; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = first ? V(T(0)) : V::load_aligned(dw + r * a.cp + v * L);
    for (std::int64_t row = row0; row < row1; ++row) {
        const T* in = a.in[row] + r0;
        const T* u = a.u[row] + c0;
#pragma GCC unroll 2
        for (std::int64_t j = 0; j < a.n; ++j, in += a.istep, u += a.cp) {
            V uv[NV];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) uv[v] = V::load_aligned(u + v * L);
#pragma GCC unroll 24
            for (int r = 0; r < RB; ++r) {
                const V b(in[r]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) acc[r][v] = xsimd::fma(b, uv[v], acc[r][v]);
            }
        }
    }
#pragma GCC unroll 24
    for (int r = 0; r < RB; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v].store_aligned(dw + r * a.cp + v * L);
}

// Rows in chunks of about kGradChunkBytes of u and x (kept in L1 while every tile of the
// chunk reads them), each chunk over every tile. A tile's sums carry over from chunk to chunk
// through dw, so each is still summed over rows and positions in order.
inline constexpr std::int64_t kGradChunkBytes = 32 << 10;
template <class Arch, class T>
void grad(const GradSpan<T>& a) {
    const std::int64_t chunk = std::max<std::int64_t>(1, kGradChunkBytes / (a.n * (a.cp + a.istep) * std::int64_t{sizeof(T)}));
    for (std::int64_t row0 = 0; row0 < a.nrows; row0 += chunk) {
        const std::int64_t row1 = std::min(a.nrows, row0 + chunk);
        const bool first = row0 == 0 && !a.accumulate;
        for_each_tile<Arch, T>(a.cp, a.nred, [&](auto R, auto NV, std::int64_t r0, std::int64_t c0) {
            grad_tile<Arch, T, decltype(R)::value, decltype(NV)::value>(a, row0, row1, first, r0, c0);
        });
    }
}

}  // namespace tg::simd_rows::kernel

// The tables of tapegrad/ops/conv_rows_kernels.hpp for one architecture, e.g. tg::simd_rows::f32_avx512.
#define TG_INSTANTIATE_ROWS(ARCH, SUFFIX)                                                                    \
    const tg::simd_rows::Kernels<float> tg::simd_rows::f32_##SUFFIX = {                                      \
        static_cast<std::int64_t>(xsimd::batch<float, ARCH>::size), &tg::simd_rows::kernel::span<ARCH, float>,   \
        &tg::simd_rows::kernel::grad<ARCH, float>};                                                           \
    const tg::simd_rows::Kernels<double> tg::simd_rows::f64_##SUFFIX = {                                     \
        static_cast<std::int64_t>(xsimd::batch<double, ARCH>::size), &tg::simd_rows::kernel::span<ARCH, double>, \
        &tg::simd_rows::kernel::grad<ARCH, double>};
