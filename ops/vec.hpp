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
// out[2i] = a[i], out[2i + 1] = b[i] for i < n (two phase rows back into one row); with
// `add`, out[2i] += a[i], out[2i + 1] += b[i].
template <class T> void interleave2(std::int64_t n, const T* a, const T* b, T* out, bool add = false);

// A run of `len` elements from offset `src` added to offset `dst`.
struct Run {
    std::int64_t src, dst, len;
};
// dst[r.dst + e] += src[r.src + e] for every run r and e < r.len, runs in order.
template <class T> void add_runs(const Run* runs, std::int64_t n, const T* src, T* dst);

}  // namespace tg::vec
