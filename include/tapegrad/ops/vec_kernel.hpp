// The xsimd bodies of tapegrad/ops/vec.hpp, templated on the architecture; included only by the
// per-architecture translation units.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include <xsimd/xsimd.hpp>

#include "tapegrad/core/transpose_kernel.hpp"
#include "tapegrad/ops/vec.hpp"
#include "tapegrad/ops/vec_kernels.hpp"

namespace tg::vec::kernel {

template <class Arch, class T>
void axpy(std::int64_t n, T a, const T* x, T* y) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    const V va(a);
    std::int64_t i = 0;
    for (; i + W <= n; i += W) xsimd::fma(va, V::load_unaligned(x + i), V::load_unaligned(y + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += a * x[i];
}

template <class Arch, class T>
void fma(std::int64_t n, const T* a, const T* b, T* y) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    std::int64_t i = 0;
    for (; i + W <= n; i += W)
        xsimd::fma(V::load_unaligned(a + i), V::load_unaligned(b + i), V::load_unaligned(y + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += a[i] * b[i];
}

template <class Arch, class T>
T dot(std::int64_t n, const T* x, const T* y) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    V acc0(T(0)), acc1(T(0));
    std::int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        acc0 = xsimd::fma(V::load_unaligned(x + i), V::load_unaligned(y + i), acc0);
        acc1 = xsimd::fma(V::load_unaligned(x + i + W), V::load_unaligned(y + i + W), acc1);
    }
    if (i + W <= n) {
        acc0 = xsimd::fma(V::load_unaligned(x + i), V::load_unaligned(y + i), acc0);
        i += W;
    }
    alignas(64) T lanes[W];  // summed in lane order (xsimd's hadd warns for AVX-512 doubles)
    (acc0 + acc1).store_aligned(lanes);
    T s = 0;
    for (std::int64_t l = 0; l < W; ++l) s += lanes[l];
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
}

// Four sums of 0·v in flight (one was bound by the add's latency: 14% of a small-channel 3-D
// weight gradient, whose x it checks whole).
template <class Arch, class T>
bool all_finite(const T* p, std::int64_t n) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    const V zero(T(0));
    V z0 = zero, z1 = zero, z2 = zero, z3 = zero;
    std::int64_t i = 0;
    for (; i + 4 * W <= n; i += 4 * W) {
        z0 = xsimd::fma(V::load_unaligned(p + i), zero, z0);
        z1 = xsimd::fma(V::load_unaligned(p + i + W), zero, z1);
        z2 = xsimd::fma(V::load_unaligned(p + i + 2 * W), zero, z2);
        z3 = xsimd::fma(V::load_unaligned(p + i + 3 * W), zero, z3);
    }
    for (; i + W <= n; i += W) z0 = xsimd::fma(V::load_unaligned(p + i), zero, z0);
    T z = 0;
    for (; i < n; ++i) z += p[i] * T(0);
    return z == T(0) && xsimd::all((z0 + z1) + (z2 + z3) == zero);
}

// xsimd 8.1's zip_lo/zip_hi interleave within 128-bit lanes on AVX2 and AVX-512 (the
// vec test caught it), so this is a plain loop that the compiler vectorises for the
// translation unit's instruction set.
template <class Arch, class T>
void interleave2(std::int64_t n, const T* __restrict a, const T* __restrict b, T* __restrict out, bool add) {
    if (add) {
        for (std::int64_t i = 0; i < n; ++i) {
            out[2 * i] += a[i];
            out[2 * i + 1] += b[i];
        }
        return;
    }
    if constexpr (sizeof(T) == 4) {
        // Short f32 runs (a stride-2 layer's 7-float phase rows) by 4-float pairs, the last
        // pair overlapping the one before; the loop below, which the compiler vectorizes,
        // leaves runs under a vector to single elements.
        if (n >= 4 && n < 16) {
            auto quad = [&](std::int64_t i) {
                const __m128 x = _mm_loadu_ps(a + i), y = _mm_loadu_ps(b + i);
                _mm_storeu_ps(out + 2 * i, _mm_unpacklo_ps(x, y));
                _mm_storeu_ps(out + 2 * i + 4, _mm_unpackhi_ps(x, y));
            };
            std::int64_t i = 0;
            for (; i + 4 <= n; i += 4) quad(i);
            if (i < n) quad(n - 4);
            return;
        }
    }
    for (std::int64_t i = 0; i < n; ++i) {
        out[2 * i] = a[i];
        out[2 * i + 1] = b[i];
    }
}

// Three to kInterleaveMaxWays phase rows: a plain loop of a constant stride, which the
// compiler vectorizes (permutes into interleaved stores) for the translation unit's
// instruction set; 1.5-2× the speed of a strided copy per phase at strides 3 to 8 (AVX-512
// and AVX2, rows of 1024, 16 MB planes; Zen 5).
template <int S, bool Add, class T>
void interleave_fixed(std::int64_t n, const T* const* src, T* __restrict out) {
    const T* __restrict p[S];
    for (int k = 0; k < S; ++k) p[k] = src[k];
    for (std::int64_t i = 0; i < n; ++i)
#pragma GCC unroll 8
        for (int k = 0; k < S; ++k) {
            if constexpr (Add) out[S * i + k] += p[k][i];
            else out[S * i + k] = p[k][i];
        }
}
template <bool Add, class T>
bool interleave_ways(std::int64_t n, std::int64_t s, const T* const* src, T* out) {
    switch (s) {
        case 3: interleave_fixed<3, Add>(n, src, out); return true;
        case 4: interleave_fixed<4, Add>(n, src, out); return true;
        case 5: interleave_fixed<5, Add>(n, src, out); return true;
        case 6: interleave_fixed<6, Add>(n, src, out); return true;
        case 7: interleave_fixed<7, Add>(n, src, out); return true;
        case 8: interleave_fixed<8, Add>(n, src, out); return true;
        default: return false;
    }
}

template <class Arch, class T>
void interleave(std::int64_t n, std::int64_t s, const T* const* src, T* out, bool add) {
    static_assert(kInterleaveMaxWays == 8, "a case per way");
    if (s == 1 && !add) return void(std::copy_n(src[0], n, out));
    if (s == 2) return interleave2<Arch, T>(n, src[0], src[1], out, add);
    if (add ? interleave_ways<true>(n, s, src, out) : interleave_ways<false>(n, s, src, out)) return;
    for (std::int64_t p = 0; p < s; ++p)
        for (std::int64_t q = 0; q < n; ++q) out[s * q + p] = add ? out[s * q + p] + src[p][q] : src[p][q];
}

template <class Arch, class T>
void add_runs(const Run* runs, std::int64_t nruns, const T* src, T* dst) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    for (std::int64_t r = 0; r < nruns; ++r) {
        const T* s = src + runs[r].src;
        T* d = dst + runs[r].dst;
        const std::int64_t n = runs[r].len;
        std::int64_t i = 0;
        for (; i + W <= n; i += W) (V::load_unaligned(d + i) + V::load_unaligned(s + i)).store_unaligned(d + i);
#ifdef __AVX512F__
        // AVX-512: the tail in one masked vector (col2im's runs are often shorter than a
        // vector: dcgan_g2's are 7-8 floats). Masked-off lanes are neither read nor written.
        // Not for runs under 3/8 of a vector: there the next run's loads, overlapping this
        // run's masked store, wait for it and a few scalar adds are cheaper (measured: tiny,
        // runs of 4-5 floats, 1.27x slower with it; dcgan_g3/g4, grouped_g8 and vol3d, runs
        // of 7-8 floats, 3-10% faster).
        if constexpr (W * sizeof(T) == 64) {
            if (i < n && 8 * n >= 3 * W) {
                if constexpr (sizeof(T) == 4) {
                    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
                    const __m512 sum = _mm512_add_ps(_mm512_maskz_loadu_ps(m, d + i), _mm512_maskz_loadu_ps(m, s + i));
                    _mm512_mask_storeu_ps(d + i, m, sum);
                } else {
                    const __mmask8 m = static_cast<__mmask8>((1u << (n - i)) - 1);
                    const __m512d sum = _mm512_add_pd(_mm512_maskz_loadu_pd(m, d + i), _mm512_maskz_loadu_pd(m, s + i));
                    _mm512_mask_storeu_pd(d + i, m, sum);
                }
                continue;
            }
        }
#endif
        for (; i < n; ++i) d[i] += s[i];
    }
}

// Lane j of the shuffles that take every second lane, from lane `first` on, wrapped to the
// vector: each half of a stride-2 result comes from one load.
template <class U, U first>
struct EveryOther {
    static constexpr U get(std::size_t j, std::size_t n) { return static_cast<U>((2 * j + first) % n); }
};
struct LowHalf {
    static constexpr bool get(std::size_t j, std::size_t n) { return j < n / 2; }
};

// out[j] = s[2j] for j < W from the 2W − 1 elements s[0 .. 2W − 2]: the even lanes of
// a = s[0 .. W) and the odd lanes of b = s[W − 1 .. 2W − 1), so nothing past the last
// element used is read.
template <class Arch, class T>
xsimd::batch<T, Arch> evens_of(const xsimd::batch<T, Arch>& a, const xsimd::batch<T, Arch>& b) {
    using V = xsimd::batch<T, Arch>;
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    constexpr auto even = xsimd::make_batch_constant<xsimd::batch<U, Arch>, EveryOther<U, 0>>();
    constexpr auto odd = xsimd::make_batch_constant<xsimd::batch<U, Arch>, EveryOther<U, 1>>();
    constexpr auto low = xsimd::make_batch_bool_constant<V, LowHalf>();
    return xsimd::select(low, xsimd::swizzle(a, even), xsimd::swizzle(b, odd));
}

// s[0], s[2], ..., s[2W − 2] as one vector, reading nothing past s[2W − 2].
template <class Arch, class T>
xsimd::batch<T, Arch> load_evens(const T* s) {
    using V = xsimd::batch<T, Arch>;
    return evens_of<Arch, T>(V::load_unaligned(s), V::load_unaligned(s + V::size - 1));
}
// s[0], s[2], s[4], s[6] (4 floats): s[0], s[2] from s[0, 4), s[4], s[6] from s[3, 7), so
// nothing past s[6] is read.
inline __m128 load_evens4(const float* s) {
    return _mm_shuffle_ps(_mm_loadu_ps(s), _mm_loadu_ps(s + 3), _MM_SHUFFLE(3, 1, 2, 0));
}

// How the row copies cut a run of n elements into stores: whole W-element vectors and one
// more that ends at n and overlaps the one before; below W, Q-element vectors the same way
// (Q = 0: none); below that single elements. Calls wide(i), quad(i) or one(i) with each
// store's first element.
template <std::int64_t W, std::int64_t Q, class Wide, class Quad, class One>
inline void cut_run(std::int64_t n, Wide&& wide, Quad&& quad, One&& one) {
    static_assert(Q <= 4, "at most 3 single elements below a Q-element vector");
    if (n >= W) {
        std::int64_t i = 0;
        for (; i + W <= n; i += W) wide(i);
        if (i < n) wide(n - W);
        return;
    }
    if constexpr (Q > 0) {
        if (n >= Q) {
            for (std::int64_t i = 0; i + Q <= n; i += Q) quad(i);
            if (n % Q) quad(n - Q);
            return;
        }
        // Written out, not a loop: GCC turns a loop of zero stores into a call to memset.
        if (n > 0) one(0);
        if (n > 1) one(1);
        if (n > 2) one(2);
        return;
    }
    for (std::int64_t i = 0; i < n; ++i) one(i);
}

// dst[e] = s[e·step] for e < n (s and d do not overlap). Steps 1 and 2 as cut_run cuts the
// run (the rows of a grid or an im2col panel are short: 28 floats at AVX2 are 3 vectors and
// one overlapping the third, not 3 vectors and 4 single elements), with vector loads and,
// for step 2, the even-lane shuffle; other steps element by element.
template <class Arch, class T>
void copy_strided(const T* s, std::int64_t step, std::int64_t n, T* d) {
    using V = xsimd::batch<T, Arch>;
    if (step != 1 && step != 2) {
        for (std::int64_t i = 0; i < n; ++i) d[i] = s[i * step];
        return;
    }
    // f32 runs shorter than a vector (a 7-wide row's phase at AVX2) by 4 floats.
    cut_run<V::size, sizeof(T) == 4 ? 4 : 0>(
        n,
        [&](std::int64_t i) {
            if (step == 1) V::load_unaligned(s + i).store_unaligned(d + i);
            else load_evens<Arch, T>(s + 2 * i).store_unaligned(d + i);
        },
        [&](std::int64_t i) {
            if constexpr (sizeof(T) == 4) _mm_storeu_ps(d + i, step == 1 ? _mm_loadu_ps(s + i) : load_evens4(s + 2 * i));
        },
        [&](std::int64_t i) { d[i] = s[i * step]; });
}

// d[e] = 0 for e < n as cut_run cuts it, with 16-byte vectors (4 floats, 2 doubles) below a
// vector: not std::fill, which calls memset for a handful of floats.
template <class Arch, class T>
void zero_lanes(T* d, std::int64_t n) {
    using V = xsimd::batch<T, Arch>;
    const V z(T(0));
    cut_run<V::size, 16 / sizeof(T)>(
        n, [&](std::int64_t i) { z.store_unaligned(d + i); },
        [&](std::int64_t i) { _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm_setzero_si128()); },
        [&](std::int64_t i) { d[i] = T(0); });
}

// d[e] = s[(e − lo)·step] for e in [lo, hi), else 0, for e < len (s is not read where
// hi <= lo): one row of copy_runs where masked vectors cannot take it.
template <class Arch, class T>
void copy_lanes(const T* s, std::int64_t step, T* d, std::int64_t len, std::int64_t lo, std::int64_t hi) {
    lo = std::min(lo, len);
    hi = std::clamp(hi, lo, len);
    zero_lanes<Arch, T>(d, lo);
    if (hi > lo) copy_strided<Arch, T>(s, step, hi - lo, d + lo);
    zero_lanes<Arch, T>(d + hi, len - hi);
}

// The stores of rows of copy_lanes (f32, steps 1 and 2) that share len, lo and hi, worked
// out once and replayed store by store down all the rows. Each part of a row, the zeros
// before lo, the copy, the zeros from hi on, is cut by cut_run, as copy_strided and
// zero_lanes cut it. Only for rows of at most two vectors (`ok`), where deciding each row's
// stores again costs more than the copy (the autoencoder's 7- and 14-float phase rows at
// AVX2: its first layer's forward 0.16 -> 0.13 ms); longer rows are faster row by row
// (the classifier's 30-float rows: 0.45-0.50 against 0.51-0.53 ms).
template <class Arch>
struct RowPlan {
    static constexpr std::int64_t W = xsimd::batch<float, Arch>::size, kMax = 4;  // 2 vectors a part, 2 parts
    std::int32_t zero_v[kMax], zero_q[4], zero_1[6], copy_v[2], copy_q[2], copy_1[3];  // zeros: two parts
    int n_zero_v = 0, n_zero_q = 0, n_zero_1 = 0, n_copy_v = 0, n_copy_q = 0, n_copy_1 = 0;
    std::int64_t lo = 0;
    bool ok = true;
    RowPlan(std::int64_t len, std::int64_t lo_, std::int64_t hi) {
        lo = std::min(lo_, len);
        hi = std::clamp(hi, lo, len);
        if (len > 2 * W) {
            ok = false;
            return;
        }
        cut(0, lo, zero_v, n_zero_v, zero_q, n_zero_q, zero_1, n_zero_1);
        cut(lo, hi, copy_v, n_copy_v, copy_q, n_copy_q, copy_1, n_copy_1);
        cut(hi, len, zero_v, n_zero_v, zero_q, n_zero_q, zero_1, n_zero_1);
    }
    static void cut(std::int64_t a, std::int64_t b, std::int32_t* v, int& nv, std::int32_t* q, int& nq, std::int32_t* one,
                    int& n1) {
        auto at = [a](std::int32_t* list, int& count) {
            return [a, list, &count](std::int64_t i) { list[count++] = static_cast<std::int32_t>(a + i); };
        };
        cut_run<W, 4>(b - a, at(v, nv), at(q, nq), at(one, n1));
    }
    // `rows` rows, the first source element of row r at s + r·lds (not read where the copy
    // is empty), into d + r·ldd, source step 2 (step2) or 1: store by store, each down all
    // the rows (no decisions inside the loops over rows).
    void run(bool step2, const float* s, std::int64_t lds, float* d, std::int64_t ldd, std::int64_t rows) const {
        if (step2) run<true>(s, lds, d, ldd, rows);
        else run<false>(s, lds, d, ldd, rows);
    }
    template <bool Step2>
    void run(const float* s, std::int64_t lds, float* d, std::int64_t ldd, std::int64_t rows) const {
        using V = xsimd::batch<float, Arch>;
        constexpr std::int64_t step = Step2 ? 2 : 1;
        const V z(0.f);
        for (int j = 0; j < n_zero_v; ++j)
            for (std::int64_t r = 0; r < rows; ++r) z.store_unaligned(d + r * ldd + zero_v[j]);
        for (int j = 0; j < n_zero_q; ++j)
            for (std::int64_t r = 0; r < rows; ++r) _mm_storeu_ps(d + r * ldd + zero_q[j], _mm_setzero_ps());
        for (int j = 0; j < n_zero_1; ++j)
            for (std::int64_t r = 0; r < rows; ++r) d[r * ldd + zero_1[j]] = 0.f;
        for (int j = 0; j < n_copy_v; ++j) {
            const float* src = s + (copy_v[j] - lo) * step;
            float* dst = d + copy_v[j];
            for (std::int64_t r = 0; r < rows; ++r, src += lds, dst += ldd) {
                if constexpr (Step2) load_evens<Arch, float>(src).store_unaligned(dst);
                else V::load_unaligned(src).store_unaligned(dst);
            }
        }
        for (int j = 0; j < n_copy_q; ++j) {
            const float* src = s + (copy_q[j] - lo) * step;
            float* dst = d + copy_q[j];
            for (std::int64_t r = 0; r < rows; ++r, src += lds, dst += ldd) {
                if constexpr (Step2) _mm_storeu_ps(dst, load_evens4(src));
                else _mm_storeu_ps(dst, _mm_loadu_ps(src));
            }
        }
        for (int j = 0; j < n_copy_1; ++j) {
            const float* src = s + (copy_1[j] - lo) * step;
            float* dst = d + copy_1[j];
            for (std::int64_t r = 0; r < rows; ++r, src += lds, dst += ldd) *dst = *src;
        }
    }
};

#ifdef __AVX512F__
// AVX-512, f32, steps 1 and 2: destination elements [e0, e0 + 16) of a row as one store of
// one vector whose zero lanes come from masked-off loads. Masked-off lanes are never read,
// so the loads may start before the row's first source element (addressed as integers).
// Step 2 takes the needed elements 2j from a = s[0, 16) and b = s[15, 31) (evens_of).
struct LaneBlock {
    __mmask16 store = 0, a = 0, b = 0;  // the lanes stored, and loaded by the first and second load
    std::intptr_t lane0 = 0;            // lane 0's source, in bytes from the row's first element
    bool reads = false;
    LaneBlock() = default;
    LaneBlock(std::int64_t e0, std::int64_t len, std::int64_t lo, std::int64_t hi, std::int64_t step) {
        constexpr std::int64_t W = 16;
        auto bits = [](std::int64_t l, std::int64_t h) {  // bits [l, h) of a 16-bit mask
            return static_cast<__mmask16>(h <= l ? 0u : ((1u << h) - 1u) & ~((1u << l) - 1u));
        };
        const std::int64_t w = std::min(W, len - e0);
        const std::int64_t dlo = std::clamp(lo - e0, std::int64_t{0}, w), dhi = std::clamp(hi - e0, dlo, w);
        store = bits(0, w);
        a = step == 1 ? bits(dlo, dhi) : bits(2 * dlo, std::min<std::int64_t>(2 * dhi - 1, W));
        b = step == 1 ? 0 : bits(std::max<std::int64_t>(2 * dlo, W) - (W - 1), 2 * dhi - 1 - (W - 1));
        lane0 = static_cast<std::intptr_t>((e0 - lo) * step * std::int64_t{sizeof(float)});
        reads = dhi > dlo;
    }
};
// The block of the row whose first source element is at `row` (never dereferenced where
// the block reads nothing) into d.
template <class Arch, bool Step2>
inline void copy_block(const LaneBlock& m, const float* row, float* d) {
    using V = xsimd::batch<float, Arch>;
    const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(row) + static_cast<std::uintptr_t>(m.lane0);
    __m512 v = _mm512_maskz_loadu_ps(m.a, reinterpret_cast<const void*>(at));
    if constexpr (Step2) v = evens_of<Arch, float>(V(v), V(_mm512_maskz_loadu_ps(m.b, reinterpret_cast<const void*>(at + 15 * sizeof(float)))));
    if (m.store == 0xffff) _mm512_storeu_ps(d, v);
    else _mm512_mask_storeu_ps(d, m.store, v);
}
#endif

template <class Arch, class T>
void copy_runs(const LaneRun* runs, std::int64_t nruns, const T* src, std::int64_t step, T* dst, std::int64_t count,
               std::int64_t src_stride, std::int64_t dst_stride) {
    [[maybe_unused]] constexpr std::int64_t W = xsimd::batch<T, Arch>::size;  // used by the AVX-512 path only
#ifdef __AVX512F__
    if constexpr (W == 16 && sizeof(T) == 4) {
        if (step == 1 || step == 2) {
            auto body = [&](auto step2) {
                for (std::int64_t r = 0; r < nruns; ++r) {
                    const LaneRun u = runs[r];  // a copy: the stores below could alias runs for all the compiler knows
                    for (std::int64_t e0 = 0; e0 < u.len; e0 += W) {
                        const LaneBlock m(e0, u.len, u.lo, u.hi, step);
                        for (std::int64_t c = 0; c < count; ++c)
                            copy_block<Arch, decltype(step2)::value>(m, m.reads ? src + u.src + c * src_stride : src,
                                                                     dst + u.dst + c * dst_stride + e0);
                    }
                }
            };
            if (step == 2) body(std::true_type{});
            else body(std::false_type{});
            return;
        }
    }
#endif
    for (std::int64_t r = 0; r < nruns; ++r) {
        const LaneRun u = runs[r];
        if constexpr (sizeof(T) == 4) {  // a run of at most two vectors: its stores worked out once, for all count rows
            if (count > 1 && (step == 1 || step == 2)) {
                const RowPlan<Arch> plan(u.len, u.lo, u.hi);
                if (plan.ok) {
                    plan.run(step == 2, src + u.src, src_stride, dst + u.dst, dst_stride, count);
                    continue;
                }
            }
        }
        for (std::int64_t c = 0; c < count; ++c) copy_lanes<Arch, T>(src + u.src + c * src_stride, step, dst + u.dst + c * dst_stride, u.len, u.lo, u.hi);
    }
}

// permute_sum's vector operations in 32-bit lanes, R of them an element of T, beside the
// masked loads and stores (tapegrad/core/transpose_kernel.hpp): AVX-512's zero-masking
// permute, or AVX2's permute and a mask of the lanes whose idx is not -1.
template <class T>
struct Permute512 : simd_kernel::MaskedLanes512<T> {
    using Base = simd_kernel::MaskedLanes512<T>;
    using Base::R;
    static __m512i index(const LanePermute& u) { return _mm512_loadu_si512(u.idx); }
    static __m512 permute(const LanePermute& u, __m512i idx, __m512 v) {
        return _mm512_maskz_permutexvar_ps(static_cast<__mmask16>(u.mask), idx, v);
    }
    static __m512 add(__m512 a, __m512 b) {
        if constexpr (R == 1) return _mm512_add_ps(a, b);
        else return _mm512_castpd_ps(_mm512_add_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
    }
    static __m512 merge(__m512 a, __m512 b) {
        return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
    }
};
template <class T>
struct Permute256 : simd_kernel::MaskedLanes256<T> {
    using Base = simd_kernel::MaskedLanes256<T>;
    using Base::R;
    static __m256i index(const LanePermute& u) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(u.idx)); }
    static __m256 permute(const LanePermute&, __m256i idx, __m256 v) {
        return _mm256_and_ps(_mm256_permutevar8x32_ps(v, idx),
                             _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(-1))));
    }
    static __m256 add(__m256 a, __m256 b) {
        if constexpr (R == 1) return _mm256_add_ps(a, b);
        else return _mm256_castpd_ps(_mm256_add_pd(_mm256_castps_pd(a), _mm256_castps_pd(b)));
    }
    static __m256 merge(__m256 a, __m256 b) { return _mm256_or_ps(a, b); }
};

// The 32-bit-lane operations of Arch's width: Permute512 or Permute256.
template <class Arch, class T>
using LaneOps = std::conditional_t<sizeof(xsimd::batch<float, Arch>) == 64, Permute512<T>, Permute256<T>>;

// simd_kernel::transpose (the transposing copy of tapegrad/core/transpose.hpp), but up to
// kInterleaveMaxWays rows into a dense destination (ldd = rows: a 3-channel image's
// positions with their channels together) interleaved as vectors: its blocks take no row of
// them, and element by element this was 8% of dcgan_g4's weight gradient.
template <class Arch, class T>
void transpose(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, T* dst, std::int64_t ldd) {
    if (rows <= kInterleaveMaxWays && ldd == rows && rows < static_cast<std::int64_t>(xsimd::batch<T, Arch>::size)) {
        const T* row[kInterleaveMaxWays];
        for (std::int64_t r = 0; r < rows; ++r) row[r] = src + r * lds;
        interleave<Arch, T>(cols, rows, row, dst, false);
        return;
    }
    simd_kernel::transpose<Arch, T>(src, lds, rows, cols, dst, ldd);
}

// P planes of permute_sum (Copy: permute_copy) at a time, so that P independent sums are in
// flight (a vector of dcgan_g1's 8 × 8 planes sums 16 permutes).
template <class Op, int P, bool Copy, class T>
void permute_planes(const LanePermute* perms, std::int64_t n, const T* src, std::int64_t src_stride, T* dst,
                    std::int64_t dst_stride, std::int64_t len) {
    constexpr std::int64_t V = Op::L32 / Op::R;
    std::int64_t k = 0;
    for (std::int64_t a = 0, e0 = 0; e0 < len; ++a, e0 += V) {
        decltype(Op::zero()) sum[P];
        for (int q = 0; q < P; ++q) sum[q] = Op::zero();
        for (; k < n && perms[k].acc == a; ++k) {
            const LanePermute& u = perms[k];
            const auto idx = Op::index(u);
            for (int q = 0; q < P; ++q) {
                const auto v = Op::permute(u, idx, Op::load(src + q * src_stride + u.src, u.count));
                sum[q] = Copy ? Op::merge(sum[q], v) : Op::add(sum[q], v);
            }
        }
        const std::int64_t c = std::min(V, len - e0);
        for (int q = 0; q < P; ++q) Op::store(dst + q * dst_stride + e0, sum[q], c);
    }
}

template <class Arch, bool Copy, class T>
void permute_all(const LanePermute* perms, std::int64_t n, const T* src, std::int64_t src_stride, T* dst,
                 std::int64_t dst_stride, std::int64_t len, std::int64_t planes) {
    using Op = LaneOps<Arch, T>;
    std::int64_t p = 0;
    for (; p + 4 <= planes; p += 4)
        permute_planes<Op, 4, Copy>(perms, n, src + p * src_stride, src_stride, dst + p * dst_stride, dst_stride, len);
    for (; p < planes; ++p)
        permute_planes<Op, 1, Copy>(perms, n, src + p * src_stride, src_stride, dst + p * dst_stride, dst_stride, len);
}
template <class Arch, class T>
void permute_sum(const LanePermute* perms, std::int64_t n, const T* src, std::int64_t src_stride, T* dst,
                 std::int64_t dst_stride, std::int64_t len, std::int64_t planes) {
    permute_all<Arch, false>(perms, n, src, src_stride, dst, dst_stride, len, planes);
}
template <class Arch, class T>
void permute_copy(const LanePermute* perms, std::int64_t n, const T* src, std::int64_t src_stride, T* dst,
                  std::int64_t dst_stride, std::int64_t len, std::int64_t planes) {
    permute_all<Arch, true>(perms, n, src, src_stride, dst, dst_stride, len, planes);
}

}  // namespace tg::vec::kernel

// The tables of tapegrad/ops/vec_kernels.hpp for one architecture, e.g. tg::vec::f32_avx512.
#define TG_VEC_TABLE(ARCH, T, NAME)                                                                      \
    const tg::vec::Kernels<T> tg::vec::NAME = {                                                          \
        &tg::vec::kernel::axpy<ARCH, T>,      &tg::vec::kernel::fma<ARCH, T>,       &tg::vec::kernel::dot<ARCH, T>, \
        &tg::vec::kernel::all_finite<ARCH, T>,                                                           \
        &tg::vec::kernel::interleave2<ARCH, T>, &tg::vec::kernel::interleave<ARCH, T>,                      \
        &tg::vec::kernel::add_runs<ARCH, T>, &tg::vec::kernel::copy_runs<ARCH, T>, \
        &tg::vec::kernel::transpose<ARCH, T>, &tg::vec::kernel::permute_sum<ARCH, T>,                      \
        &tg::vec::kernel::permute_copy<ARCH, T>,                                                           \
        sizeof(xsimd::batch<float, ARCH>)};
#define TG_VEC_INSTANTIATE(ARCH, SUFFIX) TG_VEC_TABLE(ARCH, float, f32_##SUFFIX) TG_VEC_TABLE(ARCH, double, f64_##SUFFIX)
