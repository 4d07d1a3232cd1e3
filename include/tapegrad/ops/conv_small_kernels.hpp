// The table of the small-channel convolution kernels (tapegrad/ops/conv_small.hpp), one per
// instruction set and element type (filled by ops/conv_small.avx2.cpp,
// ops/conv_small.avx512.cpp, and plainly in ops/conv_small.cpp for Isa::scalar), reached
// through simd::Dispatch. Both kernels work on flat grids: every spatial position of a
// plane is one index t, and a tap is a fixed offset from it.
#pragma once
#include <cstdint>

#include "tapegrad/core/simd.hpp"

namespace tg::simd_small {

// Elements past a grid's end that a kernel may read (inputs) or write (outputs): the
// widest register tile, 8 vectors of 16 floats.
inline constexpr std::int64_t kMargin = 128;
// The most lanes of a vector (16 floats).
inline constexpr std::int64_t kLanes = 16;

// out[o·ldo + t] = Σ_c Σ_k w[(c·ntaps + k)·nout + o] · in[c·ldi + off[k] + t]
// for o < nout and t = n·image_len + p, n < images, lo <= p < hi: the positions of each image
// that are read afterwards. Each image's span is computed in whole vectors, image after
// image, so up to a vector less one past its end is written too (and inputs are read that
// far past): positions past hi, or the next image's, rewritten when its turn comes.
template <class T>
struct Correlate {
    std::int64_t images, image_len, lo, hi, nout, nin, ntaps;
    const std::int64_t* off;
    const T* w;
    const T* in;
    std::int64_t ldi;
    T* out;
    std::int64_t ldo;
};

// dw[(o·nin + c)·ntaps + k] += Σ_n Σ_t u[n·u_image + o·ldu + t] · in[n·in_image + c·ldi + off[k] + t]
// over n < images and t < len rounded up to a whole vector (u must be zero there): each
// sum runs lane-wise over (n, t) in order, then over the lanes in order.
template <class T>
struct CorrelateGrad {
    std::int64_t images, len, nout, nin, ntaps;
    const std::int64_t* off;
    const T* u;
    std::int64_t ldu, u_image;
    const T* in;
    std::int64_t ldi, in_image;
    T* dw;
};

// Rows of a tensor and their phase rows in a grid, listed as pairs of element offsets
// (tensor row t_r, its phase-0 grid row g_r), r < nrows. For c < count, p < step and q with
// q·step + p < len, element q·step + p of tensor row r is element q of its phase row p:
//   tensor[c·tensor_c + t_r + q·step + p]  ↔  grid[c·grid_c + g_r + p·ps + q].
// split_rows copies the tensor's rows into the grid (src: tensor, dst: grid), merge_rows the
// grid's back (src: grid, dst: tensor). Nothing else of dst is written: the grids' zeros
// (their padding rows and columns) are written once, when the grids are made, and no copy
// overwrites them.
template <class T>
struct PhaseRows {
    const T* src;
    std::int64_t src_c;
    T* dst;
    std::int64_t dst_c;
    const std::int64_t* rows;
    std::int64_t nrows, len, step, ps, count;
};

template <class T>
struct Kernels {
    void (*correlate)(const Correlate<T>& a);
    void (*correlate_grad)(const CorrelateGrad<T>& a);
    void (*split_rows)(const PhaseRows<T>& a);
    void (*merge_rows)(const PhaseRows<T>& a);
};

// split_rows and merge_rows element by element: Isa::scalar's.
template <class T>
void split_rows_loop(const PhaseRows<T>& a) {
    for (std::int64_t c = 0; c < a.count; ++c)
        for (std::int64_t r = 0; r < a.nrows; ++r)
            for (std::int64_t e = 0; e < a.len; ++e)
                a.dst[c * a.dst_c + a.rows[2 * r + 1] + e % a.step * a.ps + e / a.step] = a.src[c * a.src_c + a.rows[2 * r] + e];
}
template <class T>
void merge_rows_loop(const PhaseRows<T>& a) {
    for (std::int64_t c = 0; c < a.count; ++c)
        for (std::int64_t r = 0; r < a.nrows; ++r)
            for (std::int64_t e = 0; e < a.len; ++e)
                a.dst[c * a.dst_c + a.rows[2 * r] + e] = a.src[c * a.src_c + a.rows[2 * r + 1] + e % a.step * a.ps + e / a.step];
}

extern const Kernels<float> f32_scalar, f32_avx2, f32_avx512;
extern const Kernels<double> f64_scalar, f64_avx2, f64_avx512;

}  // namespace tg::simd_small
