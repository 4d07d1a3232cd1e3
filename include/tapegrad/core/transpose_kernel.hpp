// Transposes for the kernels compiled per instruction set: the W×W transpose of W xsimd
// vectors in registers (the GEMM's packing, im2col's transposed rows), and the transposing
// copy of a matrix built on it (tapegrad/core/transpose.hpp: Tensor::contiguous, and the conv
// kernels through vec::transpose). Included only by the per-architecture translation units
// and their kernel headers.
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include <xsimd/xsimd.hpp>

namespace tg::simd_kernel {

// The W×W transpose in registers, as log2(W) stages of swapping the off-diagonal h × h
// blocks of every 2h × 2h block: lanes with bit h set take the partner vector's lanes
// shifted up by h, and the partner takes this vector's lanes shifted down by h.
template <class U, std::size_t h, bool up>
struct ShiftLanes {
    static constexpr U get(std::size_t j, std::size_t n) { return static_cast<U>(up ? (j + n - h) % n : (j + h) % n); }
};
template <std::size_t h>
struct BitClear {
    static constexpr bool get(std::size_t j, std::size_t) { return (j & h) == 0; }
};
template <class Arch, class T, std::size_t h>
[[gnu::always_inline]] inline void transpose_stage(xsimd::batch<T, Arch>* v) {
    using V = xsimd::batch<T, Arch>;
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    constexpr auto up = xsimd::make_batch_constant<xsimd::batch<U, Arch>, ShiftLanes<U, h, true>>();
    constexpr auto down = xsimd::make_batch_constant<xsimd::batch<U, Arch>, ShiftLanes<U, h, false>>();
    constexpr auto keep = xsimd::make_batch_bool_constant<V, BitClear<h>>();
    for (std::size_t i = 0; i < V::size; ++i)
        if ((i & h) == 0) {
            const V a = v[i], b = v[i + h];
            v[i] = xsimd::select(keep, a, xsimd::swizzle(b, up));
            v[i + h] = xsimd::select(keep, xsimd::swizzle(a, down), b);
        }
    if constexpr (h > 1) transpose_stage<Arch, T, h / 2>(v);
}

// v[i][j] becomes v[j][i].
template <class Arch, class T>
[[gnu::always_inline]] inline void transpose_in_registers(xsimd::batch<T, Arch>* v) {
    transpose_stage<Arch, T, xsimd::batch<T, Arch>::size / 2>(v);
}

// Loads and stores of the first `count` elements of a vector (R 32-bit lanes each), touching
// no element past them: AVX-512's masked moves, AVX2's maskload/maskstore.
template <class T>
struct MaskedLanes512 {
    static constexpr std::int64_t R = sizeof(T) / 4, L32 = 16;
    static __m512 zero() { return _mm512_setzero_ps(); }
    static __mmask16 below(std::int64_t c32) { return static_cast<__mmask16>((1u << c32) - 1); }
    static __m512 load(const T* p, std::int64_t count) {
        return count * R == L32 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(below(count * R), p);
    }
    static void store(T* p, __m512 v, std::int64_t count) {
        if (count * R == L32) _mm512_storeu_ps(p, v);
        else _mm512_mask_storeu_ps(p, below(count * R), v);
    }
};
template <class T>
struct MaskedLanes256 {
    static constexpr std::int64_t R = sizeof(T) / 4, L32 = 8;
    static __m256 zero() { return _mm256_setzero_ps(); }
    static __m256i below(std::int64_t c32) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(c32)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static __m256 load(const T* p, std::int64_t count) {
        const float* f = reinterpret_cast<const float*>(p);
        return count * R == L32 ? _mm256_loadu_ps(f) : _mm256_maskload_ps(f, below(count * R));
    }
    static void store(T* p, __m256 v, std::int64_t count) {
        float* f = reinterpret_cast<float*>(p);
        if (count * R == L32) _mm256_storeu_ps(f, v);
        else _mm256_maskstore_ps(f, below(count * R), v);
    }
};
// Those of Arch's width.
template <class Arch, class T>
using MaskedLanes = std::conditional_t<sizeof(xsimd::batch<float, Arch>) == 64, MaskedLanes512<T>, MaskedLanes256<T>>;

// dst[c·ldd + r] = src[r·lds + c] for r < rows, c < cols, T float or double (any 4- or
// 8-byte element copied bit for bit: only loads, stores and lane shuffles touch it): W × W
// blocks transposed in registers, the edges as blocks too where they are thick enough.
template <class Arch, class T>
void transpose(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, T* dst, std::int64_t ldd) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    const std::int64_t rv = rows / W * W, cv = cols / W * W;
    V v[W];
    auto block = [&](std::int64_t r0, std::int64_t c0) {
        for (std::int64_t i = 0; i < W; ++i) v[i] = V::load_unaligned(src + (r0 + i) * lds + c0);
        transpose_in_registers<Arch, T>(v);
        for (std::int64_t i = 0; i < W; ++i) v[i].store_unaligned(dst + (c0 + i) * ldd + r0);
    };
    // The blocks in the order that walks the side of the longer row stride along its rows, W
    // rows at a time: the other order keeps all its rows open at once, and rows a multiple of
    // 4 KiB apart (a 32 × 32 plane) share an L1 set, so more than its ways of them evict each
    // other's lines before they are whole (the channel rows' results into NCX: grouped_g8's
    // 32 channel rows of 4 KiB, 24% of its transposed call at AVX2 on a Zen 5).
    if (ldd > lds)
        for (std::int64_t c0 = 0; c0 < cv; c0 += W)
            for (std::int64_t r0 = 0; r0 < rv; r0 += W) block(r0, c0);
    else
        for (std::int64_t r0 = 0; r0 < rv; r0 += W)
            for (std::int64_t c0 = 0; c0 < cv; c0 += W) block(r0, c0);
    // The edges as blocks too, their missing rows and columns zeros in the registers (masked
    // loads and stores touch no element past the edge; element by element, a 2-D k3 weight's 9
    // taps were all edge: 14% of a grouped layer's transposed call in packing its weight). An
    // edge thinner than `thin` costs less element by element than a block's shuffles; the
    // rows' edge stores with masks, which AVX2 does slowly on AMD (19 rows: 1.34× the time of
    // element by element on a Zen 5), so there only at AVX-512.
    using Op = MaskedLanes<Arch, T>;
    using Reg = typename V::register_type;
    constexpr std::int64_t thin = std::max<std::int64_t>(2, W / 4);
    constexpr bool masked_stores = sizeof(V) == 64;
    auto load_n = [](const T* p, std::int64_t n) { return V(std::bit_cast<Reg>(Op::load(p, n))); };
    auto by_element = [&](std::int64_t r0, std::int64_t r1, std::int64_t c0) {
        for (std::int64_t r = r0; r < r1; ++r)
            for (std::int64_t c = c0; c < cols; ++c) dst[c * ldd + r] = src[r * lds + c];
    };
    const std::int64_t ce = cols - cv, re = rows - rv;
    if (ce >= thin)  // columns past cv of the rows before rv
        for (std::int64_t r0 = 0; r0 < rv; r0 += W) {
            for (std::int64_t i = 0; i < W; ++i) v[i] = load_n(src + (r0 + i) * lds + cv, ce);
            transpose_in_registers<Arch, T>(v);
            for (std::int64_t i = 0; i < ce; ++i) v[i].store_unaligned(dst + (cv + i) * ldd + r0);
        }
    else
        by_element(0, rv, cv);
    if (masked_stores && re >= thin)  // rows past rv, every column
        for (std::int64_t c0 = 0; c0 < cols; c0 += W) {
            const std::int64_t n = std::min(W, cols - c0);
            for (std::int64_t i = 0; i < W; ++i) v[i] = i < re ? load_n(src + (rv + i) * lds + c0, n) : V(T(0));
            transpose_in_registers<Arch, T>(v);
            for (std::int64_t i = 0; i < n; ++i) Op::store(dst + (c0 + i) * ldd + rv, std::bit_cast<decltype(Op::zero())>(Reg(v[i])), re);
        }
    else
        by_element(rv, rows, 0);
}

}  // namespace tg::simd_kernel
