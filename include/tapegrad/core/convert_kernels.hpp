// The per-architecture entry points of the bulk 16-bit conversions (tapegrad/core/convert_kernel.hpp),
// one table per instruction set (simd::Dispatch in core/convert.cpp). Each converts the
// first n - n % W elements (W = the kernel's vector width) and returns that count; the
// caller converts the rest with the scalar functions of tapegrad/core/dtype.hpp, so the per-arch
// translation units never compile (and never emit an out-of-line copy of) those inline
// functions.
#pragma once
#include <cstdint>

namespace tg::simd_convert {

struct Kernels {
    std::int64_t (*f32_to_f16)(const float* src, std::uint16_t* dst, std::int64_t n);
    std::int64_t (*f16_to_f32)(const std::uint16_t* src, float* dst, std::int64_t n);
    std::int64_t (*f32_to_bf16)(const float* src, std::uint16_t* dst, std::int64_t n);
    std::int64_t (*bf16_to_f32)(const std::uint16_t* src, float* dst, std::int64_t n);
};

extern const Kernels avx2, avx512;
extern const Kernels scalar;  // converts nothing: the caller's scalar loop does it all (core/convert.cpp)

}  // namespace tg::simd_convert
