// The per-architecture entry points of tapegrad's own SGEMM (tapegrad/core/gemm_kernel.hpp), one per
// instruction set the dispatcher in tapegrad/core/simd.hpp can pick. Row-major, BLAS semantics:
// C[M×N] = alpha · op(A) · op(B) + beta · C; beta == 0 never reads C. Single-threaded.
#pragma once
#include <cstdint>

#include "tapegrad/core/blas.hpp"

namespace tg::simd_gemm {

// A B operand made on demand (tapegrad/core/blas.hpp): lets a convolution run im2col straight into
// the GEMM's packing.
using PanelSource = tg::PanelSource<float>;

// `a_packed`: null, or op(A) packed by the same architecture's pack_a (A, lda then unused).
void sgemm_avx2(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                const float* a_packed);
void sgemm_avx512(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                  std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                  const float* a_packed);

void sgemm_avx2_from(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                     std::int64_t lda, const PanelSource& b, float beta, float* C, std::int64_t ldc,
                     const float* a_packed);
void sgemm_avx512_from(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                       std::int64_t lda, const PanelSource& b, float beta, float* C, std::int64_t ldc,
                       const float* a_packed);

// op(A) [M × K] packed once for several GEMMs that share it: packed_a_size floats at dst.
std::int64_t sgemm_avx2_packed_a_size(std::int64_t M, std::int64_t K);
std::int64_t sgemm_avx512_packed_a_size(std::int64_t M, std::int64_t K);
void sgemm_avx2_pack_a(bool ta, std::int64_t M, std::int64_t K, const float* A, std::int64_t lda, float* dst);
void sgemm_avx512_pack_a(bool ta, std::int64_t M, std::int64_t K, const float* A, std::int64_t lda, float* dst);

}  // namespace tg::simd_gemm
