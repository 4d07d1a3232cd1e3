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

template <class Arch, class T>
inline constexpr int kSums = xsimd::batch<T, Arch>::size * sizeof(T) >= 64 ? 24 : 12;
// Channel vectors per tile: with 16 registers, 12 sums, 3 weight vectors and a broadcast
// (4 would spill: AVX2 dcgan_g3 forward 15.8 -> 12.7 ms, vol3d 3.35 -> 2.69 ms).
template <class Arch, class T>
inline constexpr int kMaxNV = kSums<Arch, T> == 24 ? 4 : 3;

// The loops over J and NV are unrolled by hand's order (GCC leaves a 24-long loop rolled,
// and its sums in memory: a 1-D layer's 24 × 1 tile ran at a quarter of the speed).
template <class Arch, class T, int J, int NV>
void tile(const Span<T>& a, std::int64_t j0, std::int64_t c0) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t L = V::size;
    V acc[J][NV];
#pragma GCC unroll 24
    for (int j = 0; j < J; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[j][v] = V(T(0));
    for (std::int64_t t = 0; t < a.ntaps; ++t) {
        const T* in = a.in[t] + j0 * a.istep;
        const T* w = a.w[t] + c0;
        for (std::int64_t r = 0; r < a.nred; ++r, w += a.cp) {
            V wv[NV];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) wv[v] = V::load_aligned(w + v * L);
#pragma GCC unroll 24
            for (int j = 0; j < J; ++j) {
                const V b(in[j * a.istep + r]);
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

// Channels in blocks of kMaxNV vectors (the last as wide as what is left); each block's
// results in as few tiles as its sums allow, all of about one size.
template <class Arch, class T>
void span(const Span<T>& a) {
    constexpr std::int64_t L = xsimd::batch<T, Arch>::size;
    for (std::int64_t c0 = 0; c0 < a.cp;) {
        const std::int64_t nv = std::min<std::int64_t>(kMaxNV<Arch, T>, (a.cp - c0) / L);
        with_size<kMaxNV<Arch, T>>(nv, [&](auto NV) {
            constexpr int JMAX = kSums<Arch, T> / decltype(NV)::value;
            const std::int64_t tiles = (a.n + JMAX - 1) / JMAX;
            for (std::int64_t t = 0; t < tiles; ++t) {
                const std::int64_t j0 = a.n * t / tiles, nj = a.n * (t + 1) / tiles - j0;
                with_size<JMAX>(nj, [&](auto J) { tile<Arch, T, decltype(J)::value, decltype(NV)::value>(a, j0, c0); });
            }
        });
        c0 += nv * L;
    }
}

}  // namespace tg::simd_rows::kernel

// The tables of tapegrad/ops/conv_rows_kernels.hpp for one architecture, e.g. tg::simd_rows::f32_avx512.
#define TG_INSTANTIATE_ROWS(ARCH, SUFFIX)                                                                    \
    const tg::simd_rows::Kernels<float> tg::simd_rows::f32_##SUFFIX = {                                      \
        static_cast<std::int64_t>(xsimd::batch<float, ARCH>::size), &tg::simd_rows::kernel::span<ARCH, float>}; \
    const tg::simd_rows::Kernels<double> tg::simd_rows::f64_##SUFFIX = {                                     \
        static_cast<std::int64_t>(xsimd::batch<double, ARCH>::size), &tg::simd_rows::kernel::span<ARCH, double>};
