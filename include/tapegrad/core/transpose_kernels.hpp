// The per-architecture entry points of the transposing copy (tapegrad/core/transpose.hpp),
// one table per instruction set (simd::Dispatch in core/transpose.cpp): elements of 4 and 8
// bytes, moved as floats and doubles.
#pragma once
#include <cstdint>

namespace tg::simd_transpose {

struct Kernels {
    void (*b32)(const float* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, float* dst, std::int64_t ldd);
    void (*b64)(const double* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, double* dst, std::int64_t ldd);
};

extern const Kernels scalar, avx2, avx512;

}  // namespace tg::simd_transpose

// The table of one architecture, e.g. tg::simd_transpose::avx512 (after
// tapegrad/core/transpose_kernel.hpp).
#define TG_INSTANTIATE_TRANSPOSE(ARCH, SUFFIX)                    \
    const tg::simd_transpose::Kernels tg::simd_transpose::SUFFIX = { \
        &tg::simd_kernel::transpose<ARCH, float>, &tg::simd_kernel::transpose<ARCH, double>};
