// The table of the channel-row convolution kernels (tapegrad/ops/conv_rows.hpp), one per
// instruction set and element type (filled by ops/conv_rows.avx2.cpp, ops/conv_rows.avx512.cpp,
// and plainly in ops/conv_rows.cpp for Isa::scalar), reached through simd::Dispatch.
#pragma once
#include <cstdint>

#include "tapegrad/core/simd.hpp"

namespace tg::simd_rows {

// One span of a row: n results, each a vector of cp channels (cp a multiple of the table's
// lanes), summed over taps and reduction channels:
//   out[j·ostep + c] = Σ_t Σ_r in[t][j·istep + r] · w[t][r·cp + c]   for j < n, c < cp
// each sum in the order t, then r. Every out element of the span is written.
template <class T>
struct Span {
    std::int64_t n, ntaps, nred, cp;
    const T* const* in;  // per tap: the first result's reduction channels (contiguous)
    const T* const* w;   // per tap: nred rows of cp weights (64-byte aligned)
    std::int64_t istep;
    T* out;
    std::int64_t ostep;
};

// One tap's weight gradient over rows of results: for r < nred, c < cp,
//   dw[r·cp + c] (+)= Σ_row Σ_j in[row][j·istep + r] · u[row][j·cp + c]   (rows < nrows, j < n)
// each sum over the rows in order, then j in order, on top of dw's values where `accumulate`
// (else every dw element is written).
template <class T>
struct GradSpan {
    std::int64_t n, nrows, nred, cp;
    const T* const* in;  // per row: its first result's reduction channels
    const T* const* u;   // per row: n vectors of cp result channels (64-byte aligned)
    std::int64_t istep;
    T* dw;
    bool accumulate;
};

// The most lanes of a vector (16 floats).
inline constexpr std::int64_t kMaxLanes = 16;

template <class T>
struct Kernels {
    std::int64_t lanes;  // elements of one vector: cp and weight rows come in multiples of it
    void (*span)(const Span<T>& a);
    void (*grad)(const GradSpan<T>& a);
};

extern const Kernels<float> f32_scalar, f32_avx2, f32_avx512;
extern const Kernels<double> f64_scalar, f64_avx2, f64_avx512;

}  // namespace tg::simd_rows
