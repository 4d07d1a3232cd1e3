// The xsimd bodies of tapegrad/ops/reduce_kernels.hpp, templated on the architecture; included only
// by the per-architecture translation units (ops/reduce.avx2.cpp, ops/reduce.avx512.cpp).
// The 32 f64 partial sums are 8 AVX2 vectors or 4 AVX-512 vectors, combined in the order
// tapegrad/ops/reduce_kernels.hpp fixes for every instruction set. f32 -> f64 widening is a raw
// intrinsic (xsimd 8.1 cannot convert between batches of different lane counts).
#pragma once
#include <cstdint>

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include "tapegrad/ops/reduce_kernels.hpp"

// GCC 12's AVX-512 intrinsics seed their pass-through operand with a self-initialised
// variable (_mm512_undefined_*), which -Wmaybe-uninitialized reports once inlined here
// (GCC bug 105593, fixed in 12.3); nothing is read uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tg::simd_reduce {

// W floats widened to a vector of W doubles.
template <class Arch>
struct Widen {
    using D = xsimd::batch<double, Arch>;
    static D load(const float* p) {
        if constexpr (D::size == 8) return D(_mm512_cvtps_pd(_mm256_loadu_ps(p)));
        else return D(_mm256_cvtps_pd(_mm_loadu_ps(p)));
    }
};

template <class Arch>
void sum_rows_f32(const float* x, std::int64_t rows, std::int64_t len, double* out) {
    using D = typename Widen<Arch>::D;
    constexpr int W = static_cast<int>(D::size);
    constexpr int NV = static_cast<int>(kLanes) / W;  // vectors of partial sums: lanes [v·W, v·W + W)
    static_assert(NV * W == kLanes);
    const std::int64_t body = len - len % kLanes;
    for (std::int64_t r = 0; r < rows; ++r, x += len) {
        D acc[NV];
        for (int v = 0; v < NV; ++v) acc[v] = D(0.0);
        for (std::int64_t i = 0; i < body; i += kLanes)
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[v] = acc[v] + Widen<Arch>::load(x + i + v * W);
        // lanes j + 16 into j, j + 8 into j, ... while a step spans whole vectors
        for (int nv = NV / 2; nv >= 1; nv /= 2)
            for (int v = 0; v < nv; ++v) acc[v] = acc[v] + acc[v + nv];
        // then within the vector
        alignas(64) double t[W];
        acc[0].store_aligned(t);
        for (int w = W / 2; w >= 1; w /= 2)
            for (int j = 0; j < w; ++j) t[j] = t[j] + t[j + w];
        double s = t[0];
        for (std::int64_t i = body; i < len; ++i) s += static_cast<double>(x[i]);
        out[r] = s;
    }
}

template <class Arch, class T>
void accumulate(const T* x, std::int64_t rows, std::int64_t len, double* acc) {
    using D = xsimd::batch<double, Arch>;
    constexpr std::int64_t W = D::size;
    for (std::int64_t r = 0; r < rows; ++r, x += len) {
        std::int64_t j = 0;
        for (; j + W <= len; j += W) {
            D v;
            if constexpr (sizeof(T) == 4) v = Widen<Arch>::load(x + j);
            else v = D::load_unaligned(x + j);
            (D::load_unaligned(acc + j) + v).store_unaligned(acc + j);
        }
        for (; j < len; ++j) acc[j] += static_cast<double>(x[j]);
    }
}

// The index of each row's largest (Max) or smallest element, by the rule of
// tapegrad/ops/reduce_kernels.hpp: a vector pass finds the extreme value and whether a NaN occurs,
// then the first index holding that value (or the first NaN) is looked up.
template <class Arch, bool Max>
void pick_rows_f32(const float* x, std::int64_t rows, std::int64_t len, std::int64_t* out) {
    using B = xsimd::batch<float, Arch>;
    constexpr std::int64_t W = B::size;
    const std::int64_t body = len - len % W;
    for (std::int64_t r = 0; r < rows; ++r, x += len) {
        bool nan = false;
        float best = x[0];
        if (body > 0) {
            B b = B::load_unaligned(x);
            auto has_nan = xsimd::isnan(b);  // (not b != b: xsimd compares ordered, NaN != NaN is false)
            for (std::int64_t i = W; i < body; i += W) {
                const B v = B::load_unaligned(x + i);
                has_nan = has_nan || xsimd::isnan(v);
                b = Max ? xsimd::max(b, v) : xsimd::min(b, v);
            }
            nan = xsimd::any(has_nan);
            alignas(64) float t[W];
            b.store_aligned(t);
            for (std::int64_t j = 1; j < W; ++j) best = Max ? (t[j] > best ? t[j] : best) : (t[j] < best ? t[j] : best);
            best = Max ? (t[0] > best ? t[0] : best) : (t[0] < best ? t[0] : best);
        }
        for (std::int64_t i = body; i < len && !nan; ++i) {
            nan = x[i] != x[i];
            if (Max ? x[i] > best : x[i] < best) best = x[i];
        }
        std::int64_t at = 0;
        if (nan) {
            while (x[at] == x[at]) ++at;
        } else {
            const B m(best);
            std::int64_t i = 0;
            while (i < body && !xsimd::any(B::load_unaligned(x + i) == m)) i += W;
            at = i;
            while (x[at] != best) ++at;  // within that vector, or in the tail
        }
        out[r] = at;
    }
}

}  // namespace tg::simd_reduce

// Defines the table of tapegrad/ops/reduce_kernels.hpp for one architecture (once per arch .cpp).
#define TG_INSTANTIATE_REDUCE(ARCH, NAME)                                                            \
    const tg::simd_reduce::Kernels tg::simd_reduce::NAME{sum_rows_f32<ARCH>, accumulate<ARCH, float>, \
                                                         accumulate<ARCH, double>, pick_rows_f32<ARCH, true>, \
                                                         pick_rows_f32<ARCH, false>};
