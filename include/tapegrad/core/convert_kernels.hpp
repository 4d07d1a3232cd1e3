// The per-architecture entry points of the bulk 16-bit conversions (tapegrad/core/convert_kernel.hpp),
// one per instruction set the dispatcher in core/convert.cpp can pick. Each converts the
// first n - n % W elements (W = the kernel's vector width) and returns that count; the
// caller converts the rest with the scalar functions of tapegrad/core/dtype.hpp, so the per-arch
// translation units never compile (and never emit an out-of-line copy of) those inline
// functions.
#pragma once
#include <cstdint>

namespace tg::simd_convert {

std::int64_t f32_to_f16_avx2(const float* src, std::uint16_t* dst, std::int64_t n);
std::int64_t f16_to_f32_avx2(const std::uint16_t* src, float* dst, std::int64_t n);
std::int64_t f32_to_bf16_avx2(const float* src, std::uint16_t* dst, std::int64_t n);
std::int64_t bf16_to_f32_avx2(const std::uint16_t* src, float* dst, std::int64_t n);

std::int64_t f32_to_f16_avx512(const float* src, std::uint16_t* dst, std::int64_t n);
std::int64_t f16_to_f32_avx512(const std::uint16_t* src, float* dst, std::int64_t n);
std::int64_t f32_to_bf16_avx512(const float* src, std::uint16_t* dst, std::int64_t n);
std::int64_t bf16_to_f32_avx512(const std::uint16_t* src, float* dst, std::int64_t n);

}  // namespace tg::simd_convert
