// The per-architecture entry points of tapegrad's own SGEMM (tapegrad/core/gemm_kernel.hpp), one table
// per instruction set, reached through simd::Dispatch (core/blas.cpp). Row-major, BLAS semantics:
// C[M×N] = alpha · op(A) · op(B) + beta · C; beta == 0 never reads C. Single-threaded.
#pragma once
#include <cstdint>

#include "tapegrad/core/blas.hpp"

namespace tg::simd_gemm {

// A B operand made on demand (tapegrad/core/blas.hpp): lets a convolution run im2col straight into
// the GEMM's packing.
using PanelSource = tg::PanelSource<float>;

// `a_packed`: null, or op(A) packed by the same architecture's pack_a (A, lda then unused).
struct Kernels {
    // C = alpha · op(A) · op(B) + beta · C; a non-null `a_packed` is op(A) packed by pack_a.
    void (*sgemm)(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                  std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                  const float* a_packed);
    // The same with B made panel by panel by `b`.
    void (*sgemm_from)(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                       std::int64_t lda, const PanelSource& b, float beta, float* C, std::int64_t ldc,
                       const float* a_packed);
    std::int64_t (*packed_a_size)(std::int64_t M, std::int64_t K);  // floats
    void (*pack_a)(bool ta, std::int64_t M, std::int64_t K, const float* A, std::int64_t lda, float* dst);
    std::int64_t (*packed_b_size)(std::int64_t K, std::int64_t N);  // floats
    void (*pack_b)(bool tb, std::int64_t K, std::int64_t N, const float* B, std::int64_t ldb, float* dst);
    // C[m × N] = rows [r0, r0 + m) of op(A) · op(B) from pack_a's and pack_b's results (A with
    // Mpad = its M rounded up to mr rows; r0 a multiple of mr).
    void (*sgemm_packed)(std::int64_t Mpad, std::int64_t r0, std::int64_t m, std::int64_t N, std::int64_t K,
                         const float* a_packed, const float* b_packed, float* C, std::int64_t ldc);
    int mr;  // rows of A's micro-panels
    int kc;  // depth of pack_a's blocks: block pc of k (a multiple of kc) starts at pc·Mpad
};

extern const Kernels avx2, avx512;
extern const Kernels scalar;  // every entry null: without AVX2, OpenBLAS runs (core/blas.cpp)

}  // namespace tg::simd_gemm
