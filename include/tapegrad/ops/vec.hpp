// Small vector kernels the direct (non-GEMM) loops are built from, written with xsimd and
// compiled per instruction set (ops/vec.avx2.cpp, ops/vec.avx512.cpp; plain loops for
// Isa::scalar); each call runs the set tapegrad/core/simd.hpp has active. Float and double.
#pragma once
#include <cstdint>

namespace tg::vec {

// Whether no element of p[0, n) is an infinity or a NaN (0·v is 0 for every finite v and
// NaN otherwise; summed in several vectors: the direct kernels check whole operands with it).
template <class T> bool all_finite(const T* p, std::int64_t n);
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

// out[s·q + p] = src[p][q] for q < n, p < s (s phase rows back into one row); with `add`,
// out[s·q + p] += src[p][q]: vectors for s ≤ kInterleaveMaxWays (interleave2's for s = 2),
// element by element above. Callers take it for s ≥ 3 from kInterleaveMin elements a phase
// row on: shorter ones were faster as strided copies (3-D k3 s3 rows of 4-5: 1.11× slower
// with it; rows of 8 level; of 32-64 0.86-0.94).
template <class T> void interleave(std::int64_t n, std::int64_t s, const T* const* src, T* out, bool add = false);
inline constexpr std::int64_t kInterleaveMin = 8;
// The most phase rows interleave takes as vectors.
inline constexpr std::int64_t kInterleaveMaxWays = 8;

// A run of `len` elements from offset `src` added to offset `dst`.
struct Run {
    std::int64_t src, dst, len;
};
// dst[r.dst + e] += src[r.src + e] for every run r and e < r.len, runs in order.
template <class T> void add_runs(const Run* runs, std::int64_t n, const T* src, T* dst);
// A run of `len` destination elements of which [lo, hi) come from the source, from offset
// `src` (the element of lane lo) on, and the rest are zeros.
struct LaneRun {
    std::int64_t src, dst, len, lo, hi;
};
// For every run r, c < count and e < r.len: dst[r.dst + c·dst_stride + e] =
// src[r.src + c·src_stride + (e − r.lo)·step] for e in [r.lo, r.hi), else 0. im2col's rows:
// the runs of one tap, replayed for `count` channels, `step` being the last-axis stride.
// On AVX-512, steps 1 and 2 are one masked vector (two loads and a lane shuffle for step 2)
// per 16 elements, zeros included.
template <class T>
void copy_runs(const LaneRun* runs, std::int64_t n, const T* src, std::int64_t step, T* dst, std::int64_t count,
               std::int64_t src_stride, std::int64_t dst_stride);
// One lane permutation of a sum of permuted vectors (col2im's planes that fit a few
// vectors): the vector of `count` elements at offset `src` (zeros past them), its 32-bit
// lanes permuted by idx (result lane l takes lane idx[l]; idx[l] = -1 where bit l of mask
// is clear: that lane takes 0), is added to the result's vector `acc`. idx and mask are in
// 32-bit lanes (a double takes two): the first 16 (AVX-512), 8 (AVX2) are read.
struct LanePermute {
    std::int64_t src;
    std::int32_t acc, count;
    std::uint32_t mask;
    std::int32_t idx[16];
};
// The bytes of the vectors permute_sum works in: 64 (AVX-512 and Isa::scalar's loop) or 32.
template <class T> std::int64_t permute_bytes();
// For p < planes: dst[p·dst_stride + e] = the sum over the permutes u with u.acc = e / V
// (V elements a vector) of their lane e mod V, for e < len, every element written (0 where
// no permute reaches). The permutes are sorted by acc; the vector of u reads
// src[p·src_stride + u.src, + u.count).
template <class T>
void permute_sum(const LanePermute* perms, std::int64_t n, const T* src, std::int64_t src_stride, T* dst,
                 std::int64_t dst_stride, std::int64_t len, std::int64_t planes);
// permute_sum where no two permutes of a vector share a lane (im2col's gathers): the lanes
// are merged bit for bit (a −0 stays −0), not added.
template <class T>
void permute_copy(const LanePermute* perms, std::int64_t n, const T* src, std::int64_t src_stride, T* dst,
                  std::int64_t dst_stride, std::int64_t len, std::int64_t planes);
// dst[c·ldd + r] = src[r·lds + c] for r < rows, c < cols: W × W blocks transposed in
// registers, the edges element by element.
template <class T>
void transpose(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, T* dst, std::int64_t ldd);

}  // namespace tg::vec
