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

// v's lanes folded to 128 bits (4 floats, 2 doubles).
template <class Arch, class T>
auto fold128(const xsimd::batch<T, Arch>& v) {
    if constexpr (std::is_same_v<T, float>) {
        __m256 h;
        if constexpr (kWide<Arch, T>) h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
        else h = v;
        return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    } else {
        __m256d h;
        if constexpr (kWide<Arch, T>) h = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
        else h = v;
        return _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
    }
}

// out[j] = the sum of v[j]'s lanes, j < n (out rounded up to 4 elements, 16-byte aligned):
// each folded to 128 bits, then 4 floats or 2 doubles at a time by horizontal adds. Lane by
// lane, correlate_grad's 20 sums took 320 scalar adds, about a third of its loop's time over a
// 3-D chunk of 40-50 vectors. (xsimd 8.1's haddp, the whole transposing tree, returns the
// AVX-512 float sums in the wrong lanes: 0 1 4 5 2 3 6 7 ...)
template <class Arch, class T>
void lane_sums(const xsimd::batch<T, Arch>* v, int n, T* out) {
    if constexpr (std::is_same_v<T, float>) {
        for (int j = 0; j < n; j += 4) {
            __m128 q[4];
            for (int i = 0; i < 4; ++i) q[i] = j + i < n ? fold128<Arch, T>(v[j + i]) : _mm_setzero_ps();
            _mm_store_ps(out + j, _mm_hadd_ps(_mm_hadd_ps(q[0], q[1]), _mm_hadd_ps(q[2], q[3])));
        }
    } else {
        for (int j = 0; j < n; j += 2) {
            const __m128d q1 = j + 1 < n ? fold128<Arch, T>(v[j + 1]) : _mm_setzero_pd();
            _mm_store_pd(out + j, _mm_hadd_pd(fold128<Arch, T>(v[j]), q1));
        }
    }
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
    alignas(16) T sums[(OB * KB + 3) / 4 * 4];
    lane_sums<Arch, T>(&acc[0][0], OB * KB, sums);
    for (int o = 0; o < OB; ++o)
        for (int k = 0; k < KB; ++k) a.dw[((o0 + o) * a.nin + c) * a.ntaps + k0 + k] += sums[o * KB + k];
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

// Runs of n ≤ 2 vectors (steps 1 and 2), one per listed row, made as copy_strided makes each
// but store by store, each down all the rows: row r's run from s + rows[2r + from]·, into
// d + rows[2r + 1 − from]. Deciding each short run's stores again cost more than the copy
// (the autoencoder's 7- and 14-float phase rows at AVX2: its first layer's forward 0.13 ->
// 0.16 ms row by row); longer rows are faster row by row (the classifier's 30-float rows).
template <class Arch, class T>
void runs_by_store(const std::int64_t* rows, std::int64_t nrows, int from, const T* s, std::int64_t step, T* d, std::int64_t n) {
    using V = xsimd::batch<T, Arch>;
    const int to = 1 - from;
    vec::kernel::cut_run<V::size, sizeof(T) == 4 ? 4 : 0>(
        n,
        [&](std::int64_t i) {
            for (std::int64_t r = 0; r < nrows; ++r) {
                const T* sp = s + rows[2 * r + from] + i * step;
                if (step == 1) V::load_unaligned(sp).store_unaligned(d + rows[2 * r + to] + i);
                else vec::kernel::load_evens<Arch, T>(sp).store_unaligned(d + rows[2 * r + to] + i);
            }
        },
        [&](std::int64_t i) {
            if constexpr (sizeof(T) == 4)
                for (std::int64_t r = 0; r < nrows; ++r) {
                    const float* sp = s + rows[2 * r + from] + i * step;
                    _mm_storeu_ps(d + rows[2 * r + to] + i, step == 1 ? _mm_loadu_ps(sp) : vec::kernel::load_evens4(sp));
                }
        },
        [&](std::int64_t i) {
            for (std::int64_t r = 0; r < nrows; ++r) d[rows[2 * r + to] + i] = s[rows[2 * r + from] + i * step];
        });
}

// Short phase rows (steps 1 and 2, at most two vectors) by runs_by_store, phase by phase;
// longer ones row by row in the list's order (the tensor's: its rows read in turn), each
// row's phase rows one after another, each cut as copy_strided cuts a run (larger steps
// element by element). Made phase plane by phase plane instead, each source row read once
// per phase, with the zeros between and a call per few rows, the copies were 77% of
// depthwise_c128's forward.
template <class Arch, class T>
void split_rows(const PhaseRows<T>& a) {
    constexpr std::int64_t W = xsimd::batch<T, Arch>::size;
    // Locals, not a's fields: the stores below could alias a for all the compiler knows.
    const T* const src = a.src;
    T* const dst = a.dst;
    const std::int64_t* const rows = a.rows;
    const std::int64_t count = a.count, nrows = a.nrows, src_c = a.src_c, dst_c = a.dst_c;
    const std::int64_t len = a.len, step = a.step, ps = a.ps, phases = std::min(step, len);
    auto per = [&](std::int64_t p) { return (len - p + step - 1) / step; };
    const bool short_runs = step <= 2 && per(0) <= 2 * W;
    for (std::int64_t c = 0; c < count; ++c) {
        const T* s = src + c * src_c;
        T* d = dst + c * dst_c;
        if (short_runs) {
            for (std::int64_t p = 0; p < phases; ++p) runs_by_store<Arch, T>(rows, nrows, 0, s + p, step, d + p * ps, per(p));
            continue;
        }
        for (std::int64_t r = 0; r < nrows; ++r)
            for (std::int64_t p = 0; p < phases; ++p)
                vec::kernel::copy_strided<Arch, T>(s + rows[2 * r] + p, step, per(p), d + rows[2 * r + 1] + p * ps);
    }
}

// Each tensor row from its phase rows: one phase copied (rows of at most two vectors by
// runs_by_store), up to vec::kInterleaveMaxWays interleaved as vectors (above, the step ×
// len/step block of phase rows transposed), then the len % step elements past the last whole
// group.
template <class Arch, class T>
void merge_rows(const PhaseRows<T>& a) {
    constexpr std::int64_t W = xsimd::batch<T, Arch>::size, kMaxWays = vec::kInterleaveMaxWays;
    const T* const src = a.src;
    T* const dst = a.dst;
    const std::int64_t* const rows = a.rows;
    const std::int64_t count = a.count, nrows = a.nrows, src_c = a.src_c, dst_c = a.dst_c;
    const std::int64_t len = a.len, step = a.step, ps = a.ps, whole = len / step;
    for (std::int64_t c = 0; c < count; ++c) {
        if (step == 1 && len <= 2 * W) {
            runs_by_store<Arch, T>(rows, nrows, 1, src + c * src_c, 1, dst + c * dst_c, len);
            continue;
        }
        for (std::int64_t r = 0; r < nrows; ++r) {
            const T* s = src + c * src_c + rows[2 * r + 1];
            T* d = dst + c * dst_c + rows[2 * r];
            if (step == 1) {
                vec::kernel::copy_strided<Arch, T>(s, 1, len, d);
            } else if (step <= kMaxWays) {
                const T* phase[kMaxWays];
                for (std::int64_t p = 0; p < step; ++p) phase[p] = s + p * ps;
                vec::kernel::interleave<Arch, T>(whole, step, phase, d, false);
            } else {
                vec::kernel::transpose<Arch, T>(s, ps, step, whole, d, step);  // d[q·step + p] = s[p·ps + q]
            }
            for (std::int64_t e = whole * step; e < len; ++e) d[e] = s[(e - whole * step) * ps + whole];
        }
    }
}

}  // namespace tg::simd_small::kernel

// The tables of tapegrad/ops/conv_small_kernels.hpp for one architecture, e.g. tg::simd_small::f32_avx512.
#define TG_INSTANTIATE_SMALL(ARCH, SUFFIX)                                                                          \
    const tg::simd_small::Kernels<float> tg::simd_small::f32_##SUFFIX = {                                          \
        &tg::simd_small::kernel::correlate<ARCH, float>, &tg::simd_small::kernel::correlate_grad<ARCH, float>,      \
        &tg::simd_small::kernel::split_rows<ARCH, float>, &tg::simd_small::kernel::merge_rows<ARCH, float>};        \
    const tg::simd_small::Kernels<double> tg::simd_small::f64_##SUFFIX = {                                         \
        &tg::simd_small::kernel::correlate<ARCH, double>, &tg::simd_small::kernel::correlate_grad<ARCH, double>,    \
        &tg::simd_small::kernel::split_rows<ARCH, double>, &tg::simd_small::kernel::merge_rows<ARCH, double>};
