// The xsimd bodies of tapegrad/ops/conv_small_kernels.hpp, templated on the architecture;
// included only by the per-architecture translation units (ops/conv_small.avx2.cpp,
// ops/conv_small.avx512.cpp).
//
// correlate keeps a register tile of OB output channels × TV vectors of positions; each
// (input channel, tap) step loads TV input vectors once and feeds OB broadcast weights.
// correlate_grad keeps OB × KB sums (output channels × taps) of one input channel in
// registers over every image and position, then adds each across its lanes.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include "tapegrad/ops/conv_small_kernels.hpp"
#include "tapegrad/ops/vec_kernel.hpp"

namespace tg::simd_small::kernel {

template <class Arch, class T>
inline constexpr bool kWide = xsimd::batch<T, Arch>::size * sizeof(T) >= 64;  // 32 vector registers

using simd::with_size;

template <class Arch, class T, int OB, int TV>
void correlate_tile(const Correlate<T>& a, std::int64_t o0, std::int64_t t0) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    V acc[OB][TV];
    for (int o = 0; o < OB; ++o)
        for (int v = 0; v < TV; ++v) acc[o][v] = V(T(0));
    const T* wp = a.w + o0;
    for (std::int64_t c = 0; c < a.nin; ++c) {
        const T* ic = a.in + c * a.ldi + t0;
        for (std::int64_t k = 0; k < a.ntaps; ++k, wp += a.nout) {
            const T* ip = ic + a.off[k];
            V xv[TV];
            for (int v = 0; v < TV; ++v) xv[v] = V::load_unaligned(ip + v * W);
            for (int o = 0; o < OB; ++o) {
                const V wv(wp[o]);
                for (int v = 0; v < TV; ++v) acc[o][v] = xsimd::fma(wv, xv[v], acc[o][v]);
            }
        }
    }
    for (int o = 0; o < OB; ++o)
        for (int v = 0; v < TV; ++v) acc[o][v].store_unaligned(a.out + (o0 + o) * a.ldo + t0 + v * W);
}

// Output channels in blocks of OBMAX, the last block as wide as what is left.
template <class Arch, class T, int OBMAX, int TV>
void correlate_cols(const Correlate<T>& a, std::int64_t t0) {
    for (std::int64_t o0 = 0; o0 < a.nout;) {
        const std::int64_t ob = std::min<std::int64_t>(OBMAX, a.nout - o0);
        with_size<OBMAX>(ob, [&](auto B) { correlate_tile<Arch, T, B, TV>(a, o0, t0); });
        o0 += ob;
    }
}

// Cycles of one (input channel, tap) step of an ob × tv register tile, by its bound: each
// sum's FMA waits for its last one (4 cycles), two FMAs a cycle, two loads a cycle.
constexpr double tile_step_cycles(std::int64_t ob, std::int64_t tv) {
    return std::max({4.0, double(ob * tv) / 2, double(ob + tv) / 2});
}

// A span of nv vectors in tiles of tv: whole tiles, then one of what is left.
constexpr double span_cycles(std::int64_t nv, std::int64_t ob, std::int64_t tv) {
    return double(nv / tv) * tile_step_cycles(ob, tv) + (nv % tv ? tile_step_cycles(ob, nv % tv) : 0.0);
}

// Spans of positions in tiles of TVMAX vectors, the last one of a span as many as are left:
// each image's [lo, hi) apart, or all images' as one span from the first's lo to the last's
// hi. Apart skips the positions between (a 7 × 7 o-side grid of pitch 8 takes 7 AVX2 vectors
// of its 8, a 28 × 28 one of pitch 30 105 of 112.5) but ends every image with a short tile,
// which with few sums costs nearly a whole one (AVX-512's 1 × 6 against 1 × 8: one channel
// over 14 vectors was 10% slower apart). So apart only where the cycle model says it saves a
// sixteenth: a short tile costs a little more than the model counts (ae_l1's forward, 56
// model cycles an image apart against 56.25, ran 3% slower apart).
template <class Arch, class T, int OBMAX, int TVMAX>
void correlate_spans(const Correlate<T>& a) {
    constexpr std::int64_t W = xsimd::batch<T, Arch>::size;
    const std::int64_t ob = std::min<std::int64_t>(OBMAX, a.nout), nv = (a.hi - a.lo + W - 1) / W;
    const std::int64_t whole = a.images > 0 ? ((a.images - 1) * a.image_len + a.hi - a.lo + W - 1) / W : 0;
    const bool apart = 16 * double(a.images) * span_cycles(nv, ob, TVMAX) < 15 * span_cycles(whole, ob, TVMAX);
    auto span = [&](std::int64_t t, std::int64_t vectors) {
        for (std::int64_t v = 0; v < vectors; v += TVMAX, t += TVMAX * W) {
            if (vectors - v >= TVMAX) correlate_cols<Arch, T, OBMAX, TVMAX>(a, t);
            else with_size<TVMAX>(vectors - v, [&](auto V) { correlate_cols<Arch, T, OBMAX, V>(a, t); });
        }
    };
    if (!apart) return span(a.lo, whole);
    for (std::int64_t n = 0; n < a.images; ++n) span(n * a.image_len + a.lo, nv);
}

// The register tile by output channels: 1-2 of them, 8 vectors of positions; with AVX-512's
// 32 registers, up to 7 in blocks of 4 × 4 vectors and 8 or more in blocks of 8 × 3, which
// load each input vector once for 8 channels (the inputs of a layer with many channels come
// from L2); with AVX2's 16, blocks of 6 × 2.
template <class Arch, class T>
void correlate(const Correlate<T>& a) {
    constexpr std::int64_t W = xsimd::batch<T, Arch>::size;
    constexpr int TV = kWide<Arch, T> ? 4 : 2;
    static_assert(2 * TV * W <= kMargin, "a tile must fit in the grids' margin");
    if (a.nout <= 2)
        correlate_spans<Arch, T, 2, 2 * TV>(a);
    else if constexpr (!kWide<Arch, T>)  // 16 registers: 6 × 2 sums, 2 inputs, a weight
        correlate_spans<Arch, T, 6, TV>(a);
    else if (a.nout < 8)
        correlate_spans<Arch, T, 4, TV>(a);
    else
        correlate_spans<Arch, T, 8, 3>(a);
}

template <class Arch, class T>
T lane_sum(const xsimd::batch<T, Arch>& v) {
    constexpr std::int64_t W = xsimd::batch<T, Arch>::size;
    alignas(64) T lanes[W];
    v.store_aligned(lanes);
    T s = 0;
    for (std::int64_t l = 0; l < W; ++l) s += lanes[l];
    return s;
}

template <class Arch, class T, int OB, int KB>
void correlate_grad_tile(const CorrelateGrad<T>& a, std::int64_t c, std::int64_t o0, std::int64_t k0) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    V acc[OB][KB];
    for (int o = 0; o < OB; ++o)
        for (int k = 0; k < KB; ++k) acc[o][k] = V(T(0));
    for (std::int64_t n = 0; n < a.images; ++n) {
        const T* up = a.u + n * a.u_image + o0 * a.ldu;
        const T* ip = a.in + n * a.in_image + c * a.ldi;
        const std::int64_t* off = a.off + k0;
        for (std::int64_t t = 0; t < a.len; t += W) {
            V uv[OB];
            for (int o = 0; o < OB; ++o) uv[o] = V::load_unaligned(up + o * a.ldu + t);
            for (int k = 0; k < KB; ++k) {
                const V xv = V::load_unaligned(ip + off[k] + t);
                for (int o = 0; o < OB; ++o) acc[o][k] = xsimd::fma(uv[o], xv, acc[o][k]);
            }
        }
    }
    for (int o = 0; o < OB; ++o)
        for (int k = 0; k < KB; ++k) a.dw[((o0 + o) * a.nin + c) * a.ntaps + k0 + k] += lane_sum<Arch, T>(acc[o][k]);
}

// correlate_grad's register tile: OB output channels × KB taps of sums, beside the OB u
// vectors and the one x vector of a step: AVX-512 4 × 5 (20 sums, 9 loads per 20 FMAs;
// 5 × 5 and 6 × 4 were no faster), AVX2 3 × 4 (12 sums in 16 registers, 7 loads per 12
// FMAs; 2 × 4 took 6 per 8: ae_l2's weight gradient 0.83 -> 0.66 ms, cls_l2's 2.65 -> 2.04).
template <class Arch, class T>
inline constexpr int kGradOB = kWide<Arch, T> ? 4 : 3;
template <class Arch, class T>
inline constexpr int kGradKB = kWide<Arch, T> ? 5 : 4;

// Taps in blocks of near-equal size, at most kGradKB (9 taps: 5 + 4 at AVX-512, 3 × 3 at AVX2).
template <class Arch, class T, int OB>
void correlate_grad_taps(const CorrelateGrad<T>& a, std::int64_t c, std::int64_t o0) {
    constexpr int KB = kGradKB<Arch, T>;
    const std::int64_t blocks = (a.ntaps + KB - 1) / KB;
    for (std::int64_t b = 0; b < blocks; ++b) {
        const std::int64_t k0 = a.ntaps * b / blocks, kb = a.ntaps * (b + 1) / blocks - k0;
        with_size<KB>(kb, [&](auto B) { correlate_grad_tile<Arch, T, OB, B>(a, c, o0, k0); });
    }
}

// Output channels in blocks of near-equal size, at most kGradOB (16 at AVX2: 3, 3, 2, 3, 3,
// 2), so that no block is left with one channel.
template <class Arch, class T>
void correlate_grad(const CorrelateGrad<T>& a) {
    constexpr int OB = kGradOB<Arch, T>;
    const std::int64_t blocks = (a.nout + OB - 1) / OB;
    for (std::int64_t c = 0; c < a.nin; ++c)
        for (std::int64_t b = 0; b < blocks; ++b) {
            const std::int64_t o0 = a.nout * b / blocks, ob = a.nout * (b + 1) / blocks - o0;
            with_size<OB>(ob, [&](auto B) { correlate_grad_taps<Arch, T, B>(a, c, o0); });
        }
}

template <class Arch, class T>
void copy_rows(const CopyRows<T>& a) {
    // Locals, not a's fields: the stores below could alias a for all the compiler knows.
    const T* const src = a.src;
    T* const dst = a.dst;
    const std::int64_t count = a.count, rows = a.rows, lds = a.lds, ldd = a.ldd, src_c = a.src_c, dst_c = a.dst_c;
    const std::int64_t len = a.len, lo = a.lo, hi = a.hi, step = a.step;
#ifdef __AVX512F__
    // f32, steps 1 and 2: vec's masked 16-lane blocks, the masks made once for every row.
    if constexpr (sizeof(T) == 4) {
        constexpr std::int64_t W = 16, kMaxBlocks = 8;
        const std::int64_t blocks = (len + W - 1) / W;
        if ((step == 1 || step == 2) && blocks <= kMaxBlocks) {
            vec::kernel::LaneBlock m[kMaxBlocks];
            for (std::int64_t b = 0; b < blocks; ++b) m[b] = vec::kernel::LaneBlock(b * W, len, lo, hi, step);
            const bool reads = hi > lo;
            auto body = [&](auto step2) {
                for (std::int64_t c = 0; c < count; ++c)
                    for (std::int64_t r = 0; r < rows; ++r) {
                        const T* s = reads ? src + c * src_c + r * lds : src;
                        T* d = dst + c * dst_c + r * ldd;
                        for (std::int64_t b = 0; b < blocks; ++b)
                            vec::kernel::copy_block<Arch, decltype(step2)::value>(m[b], s, d + b * W);
                    }
            };
            if (step == 2) body(std::true_type{});
            else body(std::false_type{});
            return;
        }
    }
#endif
    if constexpr (sizeof(T) == 4) {
        if (step == 1 || step == 2) {
            const vec::kernel::RowPlan<Arch> plan(len, lo, hi);
            if (plan.ok) {
                for (std::int64_t c = 0; c < count; ++c)
                    plan.run(step == 2, hi > lo ? src + c * src_c : src, hi > lo ? lds : 0, dst + c * dst_c, ldd, rows);
                return;
            }
        }
    }
    for (std::int64_t c = 0; c < count; ++c)
        for (std::int64_t r = 0; r < rows; ++r)
            vec::kernel::copy_lanes<Arch, T>(src + c * src_c + r * lds, step, dst + c * dst_c + r * ldd, len, lo, hi);
}

}  // namespace tg::simd_small::kernel

// The tables of tapegrad/ops/conv_small_kernels.hpp for one architecture, e.g. tg::simd_small::f32_avx512.
#define TG_INSTANTIATE_SMALL(ARCH, SUFFIX)                                                            \
    const tg::simd_small::Kernels<float> tg::simd_small::f32_##SUFFIX = {                            \
        &tg::simd_small::kernel::correlate<ARCH, float>, &tg::simd_small::kernel::correlate_grad<ARCH, float>, \
        &tg::simd_small::kernel::copy_rows<ARCH, float>};                                            \
    const tg::simd_small::Kernels<double> tg::simd_small::f64_##SUFFIX = {                           \
        &tg::simd_small::kernel::correlate<ARCH, double>, &tg::simd_small::kernel::correlate_grad<ARCH, double>, \
        &tg::simd_small::kernel::copy_rows<ARCH, double>};
