// Element types and the 16-bit float conversions.
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace tg {

// b8 is the boolean dtype (name "bool"): one byte holding 0 or 1 (any non-zero value
// converts to 1). Comparisons (tapegrad/ops/math.hpp) return it; converting it to another dtype gives
// 0 or 1, converting to it gives 1 for every non-zero value (NaN included), as in PyTorch.
enum class DType { f64, f32, f16, bf16, i32, i64, b8 };

std::size_t dtype_size(DType t);
const char* dtype_name(DType t);
// Parses "f64", "f32", "f16", "bf16", "i32", "i64", "bool"; throws Error(key) otherwise.
DType dtype_from_name(const std::string& name, const std::string& key);
inline bool is_float(DType t) { return t == DType::f64 || t == DType::f32 || t == DType::f16 || t == DType::bf16; }
inline bool is_int(DType t) { return t == DType::i32 || t == DType::i64; }
inline bool is_16bit(DType t) { return t == DType::f16 || t == DType::bf16; }
// Machine epsilon of a float dtype (the spacing of 1.0).
double dtype_epsilon(DType t);

// The type kernels compute a float dtype in: f64 for f64, f32 for f32, f16 and bf16.
inline DType compute_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }
// The type any dtype's values are added and compared in: compute_dtype for the floats, i64
// for bool, the integer type itself otherwise.
inline DType accumulate_dtype(DType t) { return is_float(t) ? compute_dtype(t) : t == DType::b8 ? DType::i64 : t; }

// The one dtype dispatch of the kernels: calls f(T{}) with T the C++ type of the compute
// dtype `ct`: double for f64, float for the other floats; with WithIntegers also
// std::int64_t, std::int32_t and std::uint8_t for i64, i32 and b8 (kernels that take
// integers; the float-only ones leave it false and are never instantiated for them).
template <bool WithIntegers = false, class F>
decltype(auto) with_compute_type(DType ct, F&& f) {
    if constexpr (WithIntegers) {
        switch (ct) {
            case DType::i64: return f(std::int64_t{});
            case DType::i32: return f(std::int32_t{});
            case DType::b8: return f(std::uint8_t{});
            default: break;
        }
    }
    if (ct == DType::f64) return f(double{});
    return f(float{});
}

// IEEE binary16 <-> binary32, round to nearest even; NaN stays NaN (quiet), Inf stays Inf.
inline std::uint16_t f32_to_f16(float f) {
    std::uint32_t x;
    std::memcpy(&x, &f, 4);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u)  // Inf or NaN
        return static_cast<std::uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0u));
    if (absx >= 0x477ff000u)  // rounds to >= 65520: overflow to Inf
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (absx < 0x38800000u) {  // result is subnormal or zero in f16
        if (absx < 0x33000000u) return static_cast<std::uint16_t>(sign);  // < 2^-25 rounds to 0
        const std::uint32_t e = absx >> 23;
        const std::uint32_t m = (absx & 0x7fffffu) | 0x800000u;
        const std::uint32_t shift = 126 - e;  // 14 - (e - 127) + 13 - 1 ... gives bits below the f16 subnormal lsb
        const std::uint32_t kept = m >> shift;
        const std::uint32_t rem = m & ((1u << shift) - 1u);
        const std::uint32_t half = 1u << (shift - 1);
        std::uint32_t r = kept + ((rem > half || (rem == half && (kept & 1u))) ? 1u : 0u);
        return static_cast<std::uint16_t>(sign | r);
    }
    // normal: rebias exponent (127 -> 15) and round the 13 dropped bits to nearest even
    std::uint32_t r = absx - 0x38000000u;
    const std::uint32_t rem = r & 0x1fffu;
    r >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // may carry into the exponent: still correct
    return static_cast<std::uint16_t>(sign | r);
}

inline float f16_to_f32(std::uint16_t h) {
    const std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
    const std::uint32_t e = (h >> 10) & 0x1fu;
    std::uint32_t m = h & 0x3ffu;
    std::uint32_t x;
    if (e == 0x1f) {
        x = sign | 0x7f800000u | (m << 13);
    } else if (e == 0) {
        if (m == 0) {
            x = sign;
        } else {  // subnormal: normalise
            int ee = -1;
            do { ++ee; m <<= 1; } while ((m & 0x400u) == 0);
            x = sign | (static_cast<std::uint32_t>(127 - 15 - ee) << 23) | ((m & 0x3ffu) << 13);
        }
    } else {
        x = sign | ((e + 112u) << 23) | (m << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

// bfloat16 is the top half of a binary32; round to nearest even, keep NaN quiet.
inline std::uint16_t f32_to_bf16(float f) {
    std::uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
    const std::uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return static_cast<std::uint16_t>(x >> 16);
}

inline float bf16_to_f32(std::uint16_t b) {
    const std::uint32_t x = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

// double -> float rounded to odd (truncate toward zero, set the last bit when inexact).
// Rounding that float again to a type with at least two fewer significand bits (f16, bf16)
// equals one direct rounding of the double; plain (float)x would round twice and turn a
// double just above an f16 tie into the tie itself.
inline float f64_to_f32_round_odd(double v) {
    if (std::isnan(v)) return static_cast<float>(v);
    if (std::fabs(v) > FLT_MAX) return v < 0 ? -FLT_MAX : FLT_MAX;  // odd already; rounds on to Inf
    float f = static_cast<float>(v);
    if (static_cast<double>(f) != v) {
        std::uint32_t bits;
        std::memcpy(&bits, &f, 4);
        if (std::fabs(static_cast<double>(f)) > std::fabs(v)) --bits;  // toward zero
        bits |= 1u;                                                      // sticky: inexact
        std::memcpy(&f, &bits, 4);
    }
    return f;
}

inline std::uint16_t f64_to_f16(double v) { return f32_to_f16(f64_to_f32_round_odd(v)); }
inline std::uint16_t f64_to_bf16(double v) { return f32_to_bf16(f64_to_f32_round_odd(v)); }

}  // namespace tg
