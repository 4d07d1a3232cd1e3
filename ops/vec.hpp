// Small vector kernels the direct (non-GEMM) loops are built from, written with xsimd and
// compiled per instruction set (ops/vec.avx2.cpp, ops/vec.avx512.cpp; plain loops for
// Isa::scalar); each call runs the set core/simd.hpp has active. Float and double.
#pragma once
#include <cstdint>

namespace tg::vec {

// y[i] += a · x[i]
template <class T> void axpy(std::int64_t n, T a, const T* x, T* y);
// y[i] += a[i] · b[i]
template <class T> void fma(std::int64_t n, const T* a, const T* b, T* y);
// Σ x[i]·y[i], summed lane-wise in a fixed order (the same for every call of a given n
// on a given instruction set).
template <class T> T dot(std::int64_t n, const T* x, const T* y);
// out[2i] = a[i], out[2i + 1] = b[i] for i < n (two phase rows back into one row)
template <class T> void interleave2(std::int64_t n, const T* a, const T* b, T* out);

}  // namespace tg::vec
