#include "tapegrad/core/convert.hpp"

#include "tapegrad/core/convert_kernels.hpp"
#include "tapegrad/core/dtype.hpp"
#include "tapegrad/core/simd.hpp"

namespace tg {

namespace simd_convert {
namespace {
template <class S, class D>
std::int64_t none(const S*, D*, std::int64_t) { return 0; }
}  // namespace
const Kernels scalar = {&none<float, std::uint16_t>, &none<std::uint16_t, float>, &none<float, std::uint16_t>,
                        &none<std::uint16_t, float>};
}  // namespace simd_convert

namespace {

constexpr simd::Dispatch<simd_convert::Kernels> kConvert{simd_convert::scalar, simd_convert::avx2, simd_convert::avx512};

// The active set's kernel on the whole vectors of the buffer, then the scalar function on
// the rest (everything for Isa::scalar).
template <class S, class D, class Scalar>
void convert(const S* src, D* dst, std::int64_t n, std::int64_t (*simd_convert::Kernels::*kernel)(const S*, D*, std::int64_t),
             Scalar scalar) {
    const std::int64_t done = (kConvert.active().*kernel)(src, dst, n);
    for (std::int64_t i = done; i < n; ++i) dst[i] = scalar(src[i]);
}

}  // namespace

void f32_to_f16_n(const float* src, std::uint16_t* dst, std::int64_t n) {
    convert(src, dst, n, &simd_convert::Kernels::f32_to_f16, f32_to_f16);
}
void f16_to_f32_n(const std::uint16_t* src, float* dst, std::int64_t n) {
    convert(src, dst, n, &simd_convert::Kernels::f16_to_f32, f16_to_f32);
}
void f32_to_bf16_n(const float* src, std::uint16_t* dst, std::int64_t n) {
    convert(src, dst, n, &simd_convert::Kernels::f32_to_bf16, f32_to_bf16);
}
void bf16_to_f32_n(const std::uint16_t* src, float* dst, std::int64_t n) {
    convert(src, dst, n, &simd_convert::Kernels::bf16_to_f32, bf16_to_f32);
}

}  // namespace tg
