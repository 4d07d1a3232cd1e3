// Row-major GEMM on OpenBLAS's CBLAS, for float and double, and the one thread-count
// control that covers OpenBLAS and tapegrad's own parallel loops.
#pragma once
#include <cstdint>

namespace tg {

// C[M×N] = alpha · op(A) · op(B) + beta · C, row-major, op = transpose when the flag is set.
// Dimensions are int64 at the call sites; this checks that they fit BLAS's int.
template <class T>
void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A,
          std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc);

// Threads used by GEMM and by tapegrad's loops (at least 1): one OpenMP team; OpenBLAS
// itself stays single-threaded. Defaults to the core count,
// or TAPEGRAD_NUM_THREADS when set.
void set_num_threads(int n);
int num_threads();

// The team worth starting for `work` units of work when a team only pays off from
// `min_work` units on (below it: 1 thread, since a fork, barriers and a descheduled thread
// on a busy machine cost more than they save).
int team_size(double work, double min_work);

}  // namespace tg
