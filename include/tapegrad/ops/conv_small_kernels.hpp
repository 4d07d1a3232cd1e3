// The table of the small-channel convolution kernels (tapegrad/ops/conv_small.hpp), one per
// instruction set and element type (filled by ops/conv_small.avx2.cpp,
// ops/conv_small.avx512.cpp, and plainly in ops/conv_small.cpp for Isa::scalar), reached
// through simd::Dispatch. Both kernels work on flat grids: every spatial position of a
// plane is one index t, and a tap is a fixed offset from it.
#pragma once
#include <cstdint>

#include "tapegrad/core/simd.hpp"
#include "tapegrad/ops/vec_kernels.hpp"

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

// Rows between tensors and grids: for c < count, r < rows and e < len,
//   dst[c·dst_c + r·ldd + e] = src[c·src_c + r·lds + (e − lo)·step] for e in [lo, hi), else 0
// (src is not read where hi <= lo), channel by channel.
template <class T>
struct CopyRows {
    const T* src;
    std::int64_t lds, step;
    T* dst;
    std::int64_t ldd, rows, len, lo, hi, count, src_c, dst_c;
};

template <class T>
struct Kernels {
    void (*correlate)(const Correlate<T>& a);
    void (*correlate_grad)(const CorrelateGrad<T>& a);
    void (*copy_rows)(const CopyRows<T>& a);
};

// copy_rows element by element: Isa::scalar's (the vector tables' take vec::kernel's row copies).
template <class T>
void copy_rows_loop(const CopyRows<T>& a) {
    for (std::int64_t c = 0; c < a.count; ++c)
        for (std::int64_t r = 0; r < a.rows; ++r)
            vec::copy_lanes_scalar(a.src + c * a.src_c + r * a.lds, a.step, a.dst + c * a.dst_c + r * a.ldd, a.len, a.lo, a.hi);
}

extern const Kernels<float> f32_scalar, f32_avx2, f32_avx512;
extern const Kernels<double> f64_scalar, f64_avx2, f64_avx512;

}  // namespace tg::simd_small
