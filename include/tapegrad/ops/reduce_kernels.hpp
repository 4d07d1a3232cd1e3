// The per-architecture entry points of the vectorised sums (tapegrad/ops/reduce_kernel.hpp), one table
// per instruction set; ops/reduce.cpp picks one from simd::active() and defines the scalar
// table (Isa::scalar), which follows the same order of additions, so a sum does not depend
// on the instruction set.
#pragma once
#include <cstdint>

namespace tg::simd_reduce {

// The number of f64 partial sums of sum_rows: lane j adds the elements j, j + 32, j + 64, ...
// of the row's first len - len % 32 elements; then the lanes are added pairwise, j + 16 into
// j, j + 8 into j, j + 4 into j, j + 2 into j, lane 1 into lane 0, and the last len % 32
// elements are added to that one by one. (32 lanes: 4 AVX-512 or 8 AVX2 chains of additions,
// enough to hide the latency of an addition at the memory's pace.)
constexpr std::int64_t kLanes = 32;

struct Kernels {
    // out[r] = Σ_j x[r·len + j] in f64, in the order above.
    void (*sum_rows_f32)(const float* x, std::int64_t rows, std::int64_t len, double* out);
    // acc[j] += x[r·len + j] for r = 0, 1, ..., rows - 1 in turn (j < len): each acc[j] gets its
    // terms in the same order as a sequential loop over x, so the sums are exact to the old order.
    void (*accumulate_f32)(const float* x, std::int64_t rows, std::int64_t len, double* acc);
    void (*accumulate_f64)(const double* x, std::int64_t rows, std::int64_t len, double* acc);
    // out[r] = the index of row r's largest (argmax) or smallest (argmin) element: the first
    // one on ties (-0 and +0 tie), the first NaN when the row has one; len >= 1.
    void (*argmax_rows_f32)(const float* x, std::int64_t rows, std::int64_t len, std::int64_t* out);
    void (*argmin_rows_f32)(const float* x, std::int64_t rows, std::int64_t len, std::int64_t* out);
};

extern const Kernels avx2, avx512;
extern const Kernels scalar;  // plain loops in ops/reduce.cpp, the same order of additions

}  // namespace tg::simd_reduce
