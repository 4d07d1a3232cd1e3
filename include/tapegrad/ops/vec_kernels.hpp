// The table of the vector kernels of tapegrad/ops/vec.hpp, one per instruction set and element
// type (filled by ops/vec.avx2.cpp, ops/vec.avx512.cpp, and plain loops in ops/vec.cpp for
// Isa::scalar), reached through simd::Dispatch.
#pragma once
#include <cstdint>

#include "tapegrad/core/simd.hpp"
#include "tapegrad/ops/vec.hpp"

namespace tg::vec {

template <class T>
struct Kernels {
    void (*axpy)(std::int64_t n, T a, const T* x, T* y);
    void (*fma)(std::int64_t n, const T* a, const T* b, T* y);
    T (*dot)(std::int64_t n, const T* x, const T* y);
    bool (*all_finite)(const T* p, std::int64_t n);
    void (*interleave2)(std::int64_t n, const T* a, const T* b, T* out, bool add);
    void (*interleave)(std::int64_t n, std::int64_t s, const T* const* src, T* out, bool add);
    void (*add_runs)(const Run* runs, std::int64_t n, const T* src, T* dst);
    void (*copy_runs)(const LaneRun* runs, std::int64_t n, const T* src, std::int64_t step, T* dst, std::int64_t count,
                      std::int64_t src_stride, std::int64_t dst_stride);
    void (*transpose)(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, T* dst, std::int64_t ldd);
    void (*permute_sum)(const LanePermute* perms, std::int64_t n, const T* src, std::int64_t src_stride, T* dst,
                        std::int64_t dst_stride, std::int64_t len, std::int64_t planes);
    void (*permute_copy)(const LanePermute* perms, std::int64_t n, const T* src, std::int64_t src_stride, T* dst,
                         std::int64_t dst_stride, std::int64_t len, std::int64_t planes);
    std::int64_t permute_bytes;  // permute_sum's vector, bytes
};

// d[e] = s[(e − lo)·step] for e in [lo, hi), else 0, for e < len, element by element:
// Isa::scalar's copy of a LaneRun (copy_runs).
template <class T>
void copy_lanes_scalar(const T* s, std::int64_t step, T* d, std::int64_t len, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t e = 0; e < len; ++e) d[e] = e >= lo && e < hi ? s[(e - lo) * step] : T(0);
}

extern const Kernels<float> f32_scalar, f32_avx2, f32_avx512;
extern const Kernels<double> f64_scalar, f64_avx2, f64_avx512;

// The active set's table for T (float or double). Loops that make many short calls take it
// once and call its entries, instead of looking the set up on every call.
template <class T>
const Kernels<T>& active_kernels();

}  // namespace tg::vec
