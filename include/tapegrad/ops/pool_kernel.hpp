// The xsimd body of tapegrad/ops/pool_kernels.hpp, templated on the architecture; included only by
// the per-architecture translation units (ops/pool.avx2.cpp, ops/pool.avx512.cpp).
//
// Each plane is first staged phase-major along the last axis: row iy's phase φ < SW holds
// x[iy, φ], x[iy, φ + SW], ... after `pad` zeros and before more, so that for every kernel
// column kx the inputs of consecutive outputs ox are consecutive in one phase row. An output
// row is then cut into vectors of outputs whose running maximum and position stay in
// registers over the whole window; lanes outside the input (padding, the row's end) are
// masked out of the comparison, never read from x.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include "tapegrad/ops/conv_geometry.hpp"
#include "tapegrad/ops/pool_kernels.hpp"
#include "tapegrad/ops/vec_kernel.hpp"

namespace tg::simd_pool::kernel {

// dst[l] = v[l] for the first n lanes (a plain store for a whole vector, a masked one else:
// short copies through memcpy cost more than the window they store).
template <class Arch, class T>
inline void store_first(const xsimd::batch<T, Arch>& v, T* dst, std::int64_t n) {
    using V = xsimd::batch<T, Arch>;
    if (n == static_cast<std::int64_t>(V::size)) {
        v.store_unaligned(dst);
        return;
    }
#ifdef __AVX512F__
    if constexpr (sizeof(T) == 4) _mm512_mask_storeu_ps(dst, static_cast<__mmask16>((1u << n) - 1), v);
    else _mm512_mask_storeu_pd(dst, static_cast<__mmask8>((1u << n) - 1), v);
#else
    // (AVX2's masked stores are slow on AMD processors: whole-vector store to the stack,
    // then pieces of 16, 8 and 4 bytes.)
    alignas(32) T tmp[V::size];
    v.store_aligned(tmp);
    const char* t = reinterpret_cast<const char*>(tmp);
    char* d = reinterpret_cast<char*>(dst);
    std::size_t bytes = static_cast<std::size_t>(n) * sizeof(T);
    for (std::size_t piece : {std::size_t{16}, std::size_t{8}, std::size_t{4}})
        if (bytes >= piece) {
            std::memcpy(d, t, piece);
            d += piece;
            t += piece;
            bytes -= piece;
        }
#endif
}

template <class Arch, class T>
void max_pool_2d(const Pool2d& p, const T* x, T* y, std::int64_t* idx, std::int64_t planes, T* stage) {
    using V = xsimd::batch<T, Arch>;
    using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;  // positions, as wide as T
    using VI = xsimd::batch<I, Arch>;
    constexpr std::int64_t Wv = V::size;
    static_assert(Wv <= 16, "Stage is laid out for vectors of at most 16 lanes");
    const std::int64_t S = p.SW, H = p.H, W = p.W;
    const Stage st(p);
    const std::int64_t pad = st.pad, L = st.L;
    alignas(64) T lane_t[Wv];
    alignas(64) I lane_i[Wv];
    for (std::int64_t l = 0; l < Wv; ++l) {
        lane_t[l] = static_cast<T>(l);
        lane_i[l] = static_cast<I>(l);
    }
    const V lanes = V::load_aligned(lane_t);
    const VI lane_pos = VI::load_aligned(lane_i) * VI(static_cast<I>(S));
    const V none = xsimd::bitwise_cast<V>(VI(I(-1)));
    // Per kernel column kx: where its inputs start in a staged row (phase row, then index),
    // its offset in x's row, and the outputs [lo, hi) whose input lies inside the row.
    struct Tap {
        std::int64_t start, off, lo, hi;
    };
    std::vector<Tap> taps(static_cast<std::size_t>(p.KW));
    for (std::int64_t kx = 0; kx < p.KW; ++kx) {
        const std::int64_t off = kx * p.DW - p.PW, q = floor_div(off, S), ph = off - q * S;
        taps[static_cast<std::size_t>(kx)] = {ph * L + pad + q, off, std::max<std::int64_t>(0, ceil_div(-off, S)),
                                              std::min(p.OW, floor_div(W - 1 - off, S) + 1)};
    }
    alignas(64) I at_out[Wv];
    for (std::int64_t pl = 0; pl < planes; ++pl) {
        const T* xp = x + pl * H * W;
        for (std::int64_t oy0 = 0; oy0 < p.OH; oy0 += st.band) {
        const std::int64_t oy1 = std::min(p.OH, oy0 + st.band);
        const std::int64_t iy0 = std::max<std::int64_t>(0, oy0 * p.SH - p.PH);
        const std::int64_t iy1 = std::min(H, (oy1 - 1) * p.SH + (p.KH - 1) * p.DH - p.PH + 1);
        for (std::int64_t ph = 0; ph < S; ++ph) {  // phase ph of the band's rows, zeros around it
            const vec::LaneRun run{ph, ph * L, L, pad, pad + std::max<std::int64_t>(0, (W - ph + S - 1) / S)};
            vec::kernel::copy_runs<Arch, T>(&run, 1, xp + iy0 * W, S, stage, std::max<std::int64_t>(0, iy1 - iy0), W, S * L);
        }
        // Up to R output rows at once: their running maxima are independent chains that the
        // core overlaps.
        constexpr std::int64_t R = 4;
        for (std::int64_t oy = oy0; oy < oy1; oy += R) {
            const std::int64_t nr = std::min(R, oy1 - oy);
            for (std::int64_t c0 = 0; c0 < p.OW; c0 += Wv) {
                V best[R], at[R];
                xsimd::batch_bool<T, Arch> have[R];
                for (std::int64_t r = 0; r < R; ++r) {
                    best[r] = V(-std::numeric_limits<T>::infinity());  // as an empty window would leave them
                    at[r] = none;
                    have[r] = xsimd::batch_bool<T, Arch>(false);
                }
                for (std::int64_t ky = 0; ky < p.KH; ++ky) {
                    for (const Tap& tp : taps) {
                        // lanes [lo − c0, hi − c0) of this vector (small integers: exact in T)
                        const auto in = (lanes >= V(static_cast<T>(std::clamp<std::int64_t>(tp.lo - c0, 0, Wv)))) &
                                        (lanes < V(static_cast<T>(std::clamp<std::int64_t>(tp.hi - c0, 0, Wv))));
                        for (std::int64_t r = 0; r < nr; ++r) {
                            const std::int64_t iy = (oy + r) * p.SH + ky * p.DH - p.PH;
                            if (iy < 0 || iy >= H) continue;
                            const V v = V::load_unaligned(stage + (iy - iy0) * S * L + tp.start + c0);
                            // nothing taken yet, or larger, or a NaN over a number
                            const auto take = in & (~have[r] | (v > best[r]) | (xsimd::isnan(v) & ~xsimd::isnan(best[r])));
                            best[r] = xsimd::select(take, v, best[r]);
                            const VI pos = VI(static_cast<I>(iy * W + tp.off + c0 * S)) + lane_pos;
                            at[r] = xsimd::select(take, xsimd::bitwise_cast<V>(pos), at[r]);
                            have[r] = have[r] | in;
                        }
                    }
                }
                const std::int64_t n = std::min(Wv, p.OW - c0);
                for (std::int64_t r = 0; r < nr; ++r) {
                    xsimd::bitwise_cast<VI>(at[r]).store_aligned(at_out);
                    const std::int64_t o = (pl * p.OH + oy + r) * p.OW + c0;
                    store_first(best[r], y + o, n);
                    for (std::int64_t l = 0; l < n; ++l) idx[o + l] = at_out[l];
                }
            }
        }
        }
    }
}

}  // namespace tg::simd_pool::kernel

// The tables of tapegrad/ops/pool_kernels.hpp for one architecture, e.g. tg::simd_pool::f32_avx512.
#define TG_INSTANTIATE_POOL(ARCH, SUFFIX)                                                                    \
    const tg::simd_pool::Kernels<float> tg::simd_pool::f32_##SUFFIX = {&tg::simd_pool::kernel::max_pool_2d<ARCH, float>}; \
    const tg::simd_pool::Kernels<double> tg::simd_pool::f64_##SUFFIX = {&tg::simd_pool::kernel::max_pool_2d<ARCH, double>};
