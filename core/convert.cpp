#include "tapegrad/core/convert.hpp"

#include "tapegrad/core/convert_kernels.hpp"
#include "tapegrad/core/dtype.hpp"
#include "tapegrad/core/simd.hpp"

namespace tg {

namespace {

// Runs the kernel of the active instruction set on the whole vectors of the buffer, then
// the scalar function on the rest (everything for Isa::scalar).
template <class S, class D, class Scalar>
void convert(const S* src, D* dst, std::int64_t n, std::int64_t (*avx2)(const S*, D*, std::int64_t),
             std::int64_t (*avx512)(const S*, D*, std::int64_t), Scalar scalar) {
    std::int64_t done = 0;
    switch (simd::active()) {
        case simd::Isa::avx512: done = avx512(src, dst, n); break;
        case simd::Isa::avx2: done = avx2(src, dst, n); break;
        case simd::Isa::scalar: break;
    }
    for (std::int64_t i = done; i < n; ++i) dst[i] = scalar(src[i]);
}

}  // namespace

void f32_to_f16_n(const float* src, std::uint16_t* dst, std::int64_t n) {
    convert(src, dst, n, simd_convert::f32_to_f16_avx2, simd_convert::f32_to_f16_avx512, f32_to_f16);
}
void f16_to_f32_n(const std::uint16_t* src, float* dst, std::int64_t n) {
    convert(src, dst, n, simd_convert::f16_to_f32_avx2, simd_convert::f16_to_f32_avx512, f16_to_f32);
}
void f32_to_bf16_n(const float* src, std::uint16_t* dst, std::int64_t n) {
    convert(src, dst, n, simd_convert::f32_to_bf16_avx2, simd_convert::f32_to_bf16_avx512, f32_to_bf16);
}
void bf16_to_f32_n(const std::uint16_t* src, float* dst, std::int64_t n) {
    convert(src, dst, n, simd_convert::bf16_to_f32_avx2, simd_convert::bf16_to_f32_avx512, bf16_to_f32);
}

}  // namespace tg
