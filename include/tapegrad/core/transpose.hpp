// The transposing copy of a matrix: dst[c·ldd + r] = src[r·lds + c] for r < rows, c < cols,
// each element copied bit for bit (Tensor::contiguous of a transposed view; the conv kernels
// run the same blocks through vec::transpose). Elements of 4 and 8 bytes go through W × W blocks
// transposed in registers (tapegrad/core/transpose_kernel.hpp, compiled in
// core/transpose.avx2.cpp and core/transpose.avx512.cpp, picked by simd::active()); those of
// 1 and 2 bytes, and every element at Isa::scalar, through 8 × 8 tiles element by element.
// src and dst must not overlap.
#pragma once
#include <cstdint>

namespace tg {

// T: std::uint8_t, std::uint16_t, std::uint32_t or std::uint64_t (the element's bytes).
template <class T>
void transpose_copy(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, T* dst, std::int64_t ldd);

}  // namespace tg
