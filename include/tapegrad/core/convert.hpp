// Bulk f16/bf16 <-> f32 conversion of contiguous buffers, vectorised with xsimd (AVX2 and
// AVX-512 kernels in core/convert.avx2.cpp and core/convert.avx512.cpp, picked by
// simd::active(); plain loops over tapegrad/core/dtype.hpp's functions for Isa::scalar and for the
// tails). Every element is converted exactly as the scalar f32_to_f16, f16_to_f32,
// f32_to_bf16 and bf16_to_f32 do it, bit for bit: round to nearest even, overflow to Inf,
// subnormals kept, NaN stays NaN with the same sign, quiet bit and payload bits.
// src and dst must not overlap.
#pragma once
#include <cstdint>

namespace tg {

void f32_to_f16_n(const float* src, std::uint16_t* dst, std::int64_t n);
void f16_to_f32_n(const std::uint16_t* src, float* dst, std::int64_t n);
void f32_to_bf16_n(const float* src, std::uint16_t* dst, std::int64_t n);
void bf16_to_f32_n(const std::uint16_t* src, float* dst, std::int64_t n);

}  // namespace tg
