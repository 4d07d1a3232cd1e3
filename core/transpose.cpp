#include "tapegrad/core/transpose.hpp"

#include <algorithm>

#include "tapegrad/core/simd.hpp"
#include "tapegrad/core/transpose_kernels.hpp"

namespace tg {

namespace {

// 8 × 8 tiles element by element: with power-of-two strides the lines of a tile share a
// cache set, and 8 per side still fit the ways of L1 (32 per side thrash it).
template <class T>
void tiles(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, T* dst, std::int64_t ldd) {
    constexpr std::int64_t B = 8;
    for (std::int64_t c0 = 0; c0 < cols; c0 += B)
        for (std::int64_t r0 = 0; r0 < rows; r0 += B) {
            const T* s = src + r0 * lds + c0;
            T* d = dst + c0 * ldd + r0;
            if (c0 + B <= cols && r0 + B <= rows) {  // a whole tile: fixed trip counts
                T t[B][B];
                for (std::int64_t r = 0; r < B; ++r)
                    for (std::int64_t c = 0; c < B; ++c) t[c][r] = s[r * lds + c];
                for (std::int64_t c = 0; c < B; ++c)
                    for (std::int64_t r = 0; r < B; ++r) d[c * ldd + r] = t[c][r];
                continue;
            }
            const std::int64_t nr = std::min(B, rows - r0), nc = std::min(B, cols - c0);
            for (std::int64_t r = 0; r < nr; ++r)
                for (std::int64_t c = 0; c < nc; ++c) d[c * ldd + r] = s[r * lds + c];
        }
}

// Isa::scalar's table: the tiles, on the elements' bytes.
template <class F, class U>
void tiles_as(const F* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, F* dst, std::int64_t ldd) {
    tiles(reinterpret_cast<const U*>(src), lds, rows, cols, reinterpret_cast<U*>(dst), ldd);
}

}  // namespace

const simd_transpose::Kernels simd_transpose::scalar = {&tiles_as<float, std::uint32_t>, &tiles_as<double, std::uint64_t>};

namespace {
constexpr simd::Dispatch<simd_transpose::Kernels> kTranspose{simd_transpose::scalar, simd_transpose::avx2, simd_transpose::avx512};
}  // namespace

template <class T>
void transpose_copy(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, T* dst, std::int64_t ldd) {
    if constexpr (sizeof(T) == 4)
        kTranspose.active().b32(reinterpret_cast<const float*>(src), lds, rows, cols, reinterpret_cast<float*>(dst), ldd);
    else if constexpr (sizeof(T) == 8)
        kTranspose.active().b64(reinterpret_cast<const double*>(src), lds, rows, cols, reinterpret_cast<double*>(dst), ldd);
    else
        tiles(src, lds, rows, cols, dst, ldd);
}

template void transpose_copy<std::uint8_t>(const std::uint8_t*, std::int64_t, std::int64_t, std::int64_t, std::uint8_t*, std::int64_t);
template void transpose_copy<std::uint16_t>(const std::uint16_t*, std::int64_t, std::int64_t, std::int64_t, std::uint16_t*,
                                            std::int64_t);
template void transpose_copy<std::uint32_t>(const std::uint32_t*, std::int64_t, std::int64_t, std::int64_t, std::uint32_t*,
                                            std::int64_t);
template void transpose_copy<std::uint64_t>(const std::uint64_t*, std::int64_t, std::int64_t, std::int64_t, std::uint64_t*,
                                            std::int64_t);

}  // namespace tg
