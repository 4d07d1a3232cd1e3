// The xsimd bodies of the bulk 16-bit conversions (tapegrad/core/convert.hpp), templated on the
// architecture; included only by the per-architecture translation units
// (core/convert.avx2.cpp, core/convert.avx512.cpp). Bit manipulation is done on
// xsimd::batch<int32_t> lanes. xsimd 8.1 has no 16-bit float type and no widening or
// narrowing between 16- and 32-bit lanes, so those steps, and the f16 conversions
// themselves (F16C: VCVTPH2PS / VCVTPS2PH), are raw intrinsics in the `Io` helpers below.
//
// Bitwise agreement with tapegrad/core/dtype.hpp (checked by tests/test_simd_kernels.cpp):
// * f32 -> f16: VCVTPS2PH with imm8 = _MM_FROUND_TO_NEAREST_INT (the MXCSR rounding mode is
//   not consulted) rounds to nearest even, overflows to Inf from 65520 on, and makes f16
//   subnormals (MXCSR.FTZ does not apply to it). On NaN it keeps the sign and the top 10
//   payload bits and sets the quiet bit: sign | 0x7c00 | 0x200 | (mantissa >> 13), which is
//   what f32_to_f16 returns, so no fix-up is needed. (A one-off sweep of all 2^32 inputs
//   found both kernels, and both bf16 kernels, equal to the scalar functions; the tests
//   sweep every high half with 18 low halves.)
// * f16 -> f32: VCVTPH2PS is exact for every finite value and Inf, but it QUIETS signalling
//   NaNs (0x7c01 -> 0x7fc02000), whereas f16_to_f32 keeps them signalling (0x7c01 ->
//   0x7f802000: sign, all-ones exponent, payload << 13). NaN lanes are therefore rebuilt
//   with integer operations and blended in.
// * f32 <-> bf16: integer operations only, the same formulas as the scalar functions.
#pragma once
#include <cstdint>

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include "tapegrad/core/convert_kernels.hpp"

// GCC 12's AVX-512 intrinsics seed their pass-through operand with a self-initialised
// variable (_mm512_undefined_*), which -Wmaybe-uninitialized reports once inlined here
// (GCC bug 105593, fixed in 12.3); nothing is read uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tg::simd_convert {

// Raw intrinsics the batches cannot express, per instruction set.
template <class Arch>
struct Io {
    using F = xsimd::batch<float, Arch>;
    using I = xsimd::batch<std::int32_t, Arch>;
    static constexpr bool k512 = F::size == 16;  // else AVX2, 8 lanes
    static I load_u16(const std::uint16_t* p) {  // zero-extends W halves to 32-bit lanes
        if constexpr (k512) return I(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
        else return I(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    }
    static void store_u16(const I& v, std::uint16_t* p) {  // every lane must hold 0 .. 0xffff
        if constexpr (k512) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(v));
        } else {
            // packus works within 128-bit halves: [v0..3 v0..3 | v4..7 v4..7]; qwords 0 and 2 hold v0..7.
            const __m256i packed = _mm256_packus_epi32(v, v);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08)));
        }
    }
    static F f16_to_f32(const std::uint16_t* p) {
        if constexpr (k512) return F(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
        else return F(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    }
    static void f32_to_f16(const F& x, std::uint16_t* p) {
        if constexpr (k512) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
        else _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
    }
};

template <class Arch>
std::int64_t f32_to_f16(const float* src, std::uint16_t* dst, std::int64_t n) {
    using IO = Io<Arch>;
    constexpr std::int64_t W = IO::F::size;
    std::int64_t i = 0;
    for (; i + W <= n; i += W) IO::f32_to_f16(IO::F::load_unaligned(src + i), dst + i);
    return i;
}

template <class Arch>
std::int64_t f16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n) {
    using IO = Io<Arch>;
    using F = typename IO::F;
    using I = typename IO::I;
    constexpr std::int64_t W = F::size;
    std::int64_t i = 0;
    for (; i + W <= n; i += W) {
        F f = IO::f16_to_f32(src + i);
        const I h = IO::load_u16(src + i);
        const I habs = h & I(0x7fff);
        const auto nan = habs > I(0x7c00);
        if (xsimd::any(nan)) {
            // sign | 0x7f800000 | payload << 13: (0x7c00 | m) << 13 = 0x0f800000 | m << 13, plus 0x70000000.
            const I bits = ((h & I(0x8000)) << 16) | ((habs << 13) + I(0x70000000));
            f = xsimd::select(xsimd::bool_cast(nan), xsimd::bitwise_cast<F>(bits), f);
        }
        f.store_unaligned(dst + i);
    }
    return i;
}

template <class Arch>
std::int64_t f32_to_bf16(const float* src, std::uint16_t* dst, std::int64_t n) {
    using IO = Io<Arch>;
    using I = typename IO::I;
    constexpr std::int64_t W = I::size;
    std::int64_t i = 0;
    for (; i + W <= n; i += W) {
        const I x = xsimd::bitwise_cast<I>(IO::F::load_unaligned(src + i));
        const auto nan = (x & I(0x7fffffff)) > I(0x7f800000);
        // Round to nearest even: x + 0x7fff + lsb, then the top half (the lanes wrap like the
        // scalar uint32 arithmetic; no non-NaN input carries out of bit 31). NaN: the top half
        // with the quiet bit (0x40 of the half, 0x400000 of the word) set.
        const I rounded = x + I(0x7fff) + ((x >> 16) & I(1));
        const I word = xsimd::select(nan, x | I(0x400000), rounded);
        IO::store_u16((word >> 16) & I(0xffff), dst + i);  // >> is arithmetic on int32: mask
    }
    return i;
}

template <class Arch>
std::int64_t bf16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n) {
    using IO = Io<Arch>;
    using I = typename IO::I;
    constexpr std::int64_t W = I::size;
    std::int64_t i = 0;
    for (; i + W <= n; i += W) xsimd::bitwise_cast<typename IO::F>(IO::load_u16(src + i) << 16).store_unaligned(dst + i);
    return i;
}

}  // namespace tg::simd_convert

// Defines the table of tapegrad/core/convert_kernels.hpp for one architecture (once per arch .cpp).
#define TG_INSTANTIATE_CONVERT(ARCH, SUFFIX)                                                   \
    const tg::simd_convert::Kernels tg::simd_convert::SUFFIX = {                              \
        &tg::simd_convert::f32_to_f16<ARCH>, &tg::simd_convert::f16_to_f32<ARCH>,             \
        &tg::simd_convert::f32_to_bf16<ARCH>, &tg::simd_convert::bf16_to_f32<ARCH>};
