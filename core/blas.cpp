#include "core/blas.hpp"

#include <cblas.h>

#include <climits>
#include <cstdlib>
#include <thread>

#include "core/error.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

extern "C" void openblas_set_num_threads(int);

namespace tg {

namespace {

int fit_int(std::int64_t v, const char* what) {
    if (v < 0 || v > INT_MAX) fail("gemm", "GEMM dimension ", what, " = ", v, " does not fit a BLAS int");
    return static_cast<int>(v);
}

int initial_threads() {
    if (const char* e = std::getenv("TAPEGRAD_NUM_THREADS")) {
        const int n = std::atoi(e);
        if (n >= 1) return n;
    }
    const unsigned hc = std::thread::hardware_concurrency();
    return hc == 0 ? 1 : static_cast<int>(hc);
}

int& thread_setting() {
    static int n = [] {
        const int v = initial_threads();
        openblas_set_num_threads(v);
#ifdef _OPENMP
        omp_set_num_threads(v);
#endif
        return v;
    }();
    return n;
}

}  // namespace

void set_num_threads(int n) {
    if (n < 1) fail("threads", "thread count ", n, " must be >= 1");
    thread_setting() = n;
    openblas_set_num_threads(n);
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
}

int num_threads() { return thread_setting(); }

template <>
void gemm<float>(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                 std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
    if (M == 0 || N == 0) return;
    (void)num_threads();
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, fit_int(M, "M"),
                fit_int(N, "N"), fit_int(K, "K"), alpha, A, fit_int(lda, "lda"), B, fit_int(ldb, "ldb"), beta, C,
                fit_int(ldc, "ldc"));
}

template <>
void gemm<double>(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, double alpha, const double* A,
                  std::int64_t lda, const double* B, std::int64_t ldb, double beta, double* C, std::int64_t ldc) {
    if (M == 0 || N == 0) return;
    (void)num_threads();
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, fit_int(M, "M"),
                fit_int(N, "N"), fit_int(K, "K"), alpha, A, fit_int(lda, "lda"), B, fit_int(ldb, "ldb"), beta, C,
                fit_int(ldc, "ldc"));
}

}  // namespace tg
