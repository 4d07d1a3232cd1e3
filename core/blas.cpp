#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/env.hpp"

#include <cblas.h>

#include <atomic>
#include <algorithm>
#include <charconv>
#include <climits>
#include <cctype>
#include <cstring>
#include <cstdlib>
#include <numeric>
#include <string>
#include <thread>
#include <type_traits>

#include "tapegrad/core/error.hpp"
#include "tapegrad/core/gemm_kernels.hpp"
#include "tapegrad/core/simd.hpp"
#include "tapegrad/core/workspace.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

extern "C" void openblas_set_num_threads(int);

namespace tg {

const simd_gemm::Kernels simd_gemm::scalar = {};

namespace {

int fit_int(std::int64_t v, const char* what) {
    if (v < 0 || v > INT_MAX) fail("gemm", "GEMM dimension ", what, " = ", v, " does not fit a BLAS int");
    return static_cast<int>(v);
}

int initial_threads() {
    if (const std::optional<std::int64_t> n = env::integer("TAPEGRAD_NUM_THREADS", 1, kMaxThreads)) return static_cast<int>(*n);
    const unsigned hc = std::thread::hardware_concurrency();
    return hc == 0 ? 1 : std::min(kMaxThreads, static_cast<int>(hc));
}

// One thread pool: OpenBLAS always runs single-threaded, and tapegrad's OpenMP team
// splits the work (two pools that both spin wreck the 2-core case; see bench/PEERS.md).
// Atomic: another thread may change the setting while a kernel runs; each kernel call
// reads it once (team_size) and keeps that team for the whole call.
std::atomic<int>& thread_setting() {
    static std::atomic<int> n = [] {
        openblas_set_num_threads(1);
        return initial_threads();
    }();
    return n;
}

// The table of tapegrad's own f32 GEMM for the active set, or null where OpenBLAS runs.
const simd_gemm::Kernels* own_sgemm() {
#ifdef TAPEGRAD_GEMM_OPENBLAS
    return nullptr;
#else
    static constexpr simd::Dispatch<simd_gemm::Kernels> d{simd_gemm::scalar, simd_gemm::avx2, simd_gemm::avx512};
    const simd_gemm::Kernels& k = d.active();
    return k.sgemm ? &k : nullptr;
#endif
}

// f32 runs on tapegrad's own xsimd GEMM (tapegrad/core/gemm_kernel.hpp) unless the build chose
// OpenBLAS (TAPEGRAD_GEMM=openblas) or the CPU has no AVX2; f64 always runs on OpenBLAS.
template <class T>
void blas_call(bool ta, bool tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta, T* C,
               int ldc) {
    if constexpr (std::is_same_v<T, float>)
        if (const simd_gemm::Kernels* k = own_sgemm()) return k->sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
    const auto TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
    if constexpr (std::is_same_v<T, float>) cblas_sgemm(CblasRowMajor, TA, TB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else cblas_dgemm(CblasRowMajor, TA, TB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

template <class T>
void gemm_impl(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, std::int64_t lda,
               const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
    if (M == 0 || N == 0) return;
    const int m = fit_int(M, "M"), n = fit_int(N, "N"), k = fit_int(K, "K");
    const int la = fit_int(lda, "lda"), lb = fit_int(ldb, "ldb"), lc = fit_int(ldc, "ldc");
    const int nt = thread_setting();
    bool in_team = false;
#ifdef _OPENMP
    in_team = omp_in_parallel();
#endif
    // Outside a team and worth a team (team_min_flops, as in the conv kernels): split the
    // larger of M and N between the threads.
    if (nt == 1 || in_team || team_size(2.0 * static_cast<double>(M) * N * K, team_min_flops()) == 1) {
        blas_call(ta, tb, m, n, k, alpha, A, la, B, lb, beta, C, lc);
        return;
    }
    const bool split_m = M >= N;
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num(), T_ = omp_get_num_threads();
        const std::int64_t total = split_m ? M : N;
        const std::int64_t lo = total * t / T_, hi = total * (t + 1) / T_;
        if (hi > lo) {
            if (split_m) {  // rows of C; rows of op(A)
                const T* a = ta ? A + lo : A + lo * lda;
                blas_call(ta, tb, static_cast<int>(hi - lo), n, k, alpha, a, la, B, lb, beta, C + lo * ldc, lc);
            } else {  // columns of C; columns of op(B)
                const T* b = tb ? B + lo * ldb : B + lo;
                blas_call(ta, tb, m, static_cast<int>(hi - lo), k, alpha, A, la, b, lb, beta, C + lo, lc);
            }
        }
    }
}

template <class T>
void gemm_from_impl(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, std::int64_t lda,
                    const PanelSource<T>& b, T beta, T* C, std::int64_t ldc) {
    if (M == 0 || N == 0) return;
    if constexpr (std::is_same_v<T, float>)
        if (const simd_gemm::Kernels* k = own_sgemm()) return k->sgemm_from(ta, M, N, K, alpha, A, lda, b, beta, C, ldc, nullptr);
    Buffer<T> whole(checked_mul(K, N, "gemm"));
    b.pack(b.ctx, 0, K, 0, N, N, whole.data());
    blas_call(ta, false, fit_int(M, "M"), fit_int(N, "N"), fit_int(K, "K"), alpha, A, fit_int(lda, "lda"), whole.data(),
              fit_int(N, "N"), beta, C, fit_int(ldc, "ldc"));
}

}  // namespace

template <>
void gemm_from<float>(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                      std::int64_t lda, const PanelSource<float>& b, float beta, float* C, std::int64_t ldc) {
    gemm_from_impl(ta, M, N, K, alpha, A, lda, b, beta, C, ldc);
}

template <>
void gemm_from<double>(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, double alpha, const double* A,
                       std::int64_t lda, const PanelSource<double>& b, double beta, double* C, std::int64_t ldc) {
    gemm_from_impl(ta, M, N, K, alpha, A, lda, b, beta, C, ldc);
}

template <class T>
PackedA<T>::PackedA(bool trans, std::int64_t M, std::int64_t K, const T* A, std::int64_t lda, int team)
    : trans_(trans), M_(M), K_(K), A_(A), lda_(lda) {
    if constexpr (std::is_same_v<T, float>) {
        if (M <= 0 || K <= 0) return;
        if (!(kernels_ = own_sgemm())) return;
        packed_ = Buffer<float>(kernels_->packed_a_size(M, K));
        // pack_a lays op(A) out as blocks of kc of depth, each of Mpad rows in panels of mr:
        // rows [i0, i1) of the block at depth pc (i0 a multiple of mr) are pack_a of those
        // rows and that depth alone, at pc·Mpad + i0·d (d the block's depth, kc but for the
        // last block). A team packs such pieces in turn (a weight packed by one thread while
        // the other waited: 7% of dcgan_g1's transposed call at 2 threads); below
        // kTeamPackFloats the team's start costs more than it saves.
        constexpr std::int64_t kTeamPackFloats = 1 << 15;
        const std::int64_t mr = kernels_->mr, kc = kernels_->kc, Mpad = (M + mr - 1) / mr * mr, depth_blocks = (K + kc - 1) / kc;
        const int nt = M * K >= kTeamPackFloats ? std::max(1, team) : 1;
        // Enough pieces for the team: row parts of whole panels where the depth has too few blocks.
        const std::int64_t row_parts = std::clamp<std::int64_t>((2 * nt + depth_blocks - 1) / depth_blocks, 1, Mpad / mr);
        const std::int64_t pieces = depth_blocks * row_parts;
        float* const dst = packed_.data();
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && pieces > 1)
        for (std::int64_t q = 0; q < pieces; ++q) {
            const std::int64_t pc = q / row_parts * kc, part = q % row_parts, d = std::min(kc, K - pc);
            const std::int64_t i0 = Mpad / mr * part / row_parts * mr, i1 = std::min(M, Mpad / mr * (part + 1) / row_parts * mr);
            if (i0 < i1)
                kernels_->pack_a(trans, i1 - i0, d, trans ? A + pc * lda + i0 : A + i0 * lda + pc, lda, dst + pc * Mpad + i0 * d);
        }
    }
}
template class PackedA<float>;
template class PackedA<double>;

template <class T>
void gemm(const PackedA<T>& a, bool tb, std::int64_t N, T alpha, const T* B, std::int64_t ldb, T beta, T* C,
          std::int64_t ldc) {
    if (a.M_ == 0 || N == 0) return;
    if constexpr (std::is_same_v<T, float>) {
        if (a.kernels_)
            return a.kernels_->sgemm(a.trans_, tb, a.M_, N, a.K_, alpha, a.A_, a.lda_, B, ldb, beta, C, ldc, a.packed_.data());
    }
    blas_call(a.trans_, tb, fit_int(a.M_, "M"), fit_int(N, "N"), fit_int(a.K_, "K"), alpha, a.A_, fit_int(a.lda_, "lda"), B,
              fit_int(ldb, "ldb"), beta, C, fit_int(ldc, "ldc"));
}

template <class T>
void gemm_from(const PackedA<T>& a, std::int64_t N, T alpha, const PanelSource<T>& b, T beta, T* C, std::int64_t ldc) {
    if (a.M_ == 0 || N == 0) return;
    if constexpr (std::is_same_v<T, float>) {
        if (a.kernels_)
            return a.kernels_->sgemm_from(a.trans_, a.M_, N, a.K_, alpha, a.A_, a.lda_, b, beta, C, ldc, a.packed_.data());
    }
    gemm_from<T>(a.trans_, a.M_, N, a.K_, alpha, a.A_, a.lda_, b, beta, C, ldc);
}

namespace {
// gemm_block_rows on a GEMM whose A micro-panels have `mr` rows (0: a GEMM that does not block).
std::int64_t block_rows(std::int64_t M, std::int64_t unit, std::int64_t N, std::size_t elem_bytes, int mr) {
    if (mr == 0) return M;
    const std::int64_t step = std::lcm(unit, static_cast<std::int64_t>(mr));  // whole units, whole micro-panels
    const std::int64_t want = (std::int64_t{128} << 10) / static_cast<std::int64_t>(elem_bytes * std::max<std::int64_t>(N, 1));
    return std::min(M, std::max<std::int64_t>(1, want / step) * step);
}
}  // namespace

std::int64_t gemm_block_rows(std::int64_t M, std::int64_t unit, std::int64_t N, std::size_t elem_bytes) {
    if (unit < 1) fail("unit", "gemm_block_rows: unit ", unit, " is not positive");
    const simd_gemm::Kernels* k = elem_bytes == sizeof(float) ? own_sgemm() : nullptr;
    return block_rows(M, unit, N, elem_bytes, k ? k->mr : 0);
}

template <class T>
void gemm_row_blocks(const PackedA<T>& a, std::int64_t unit, std::int64_t N, const T* B, std::int64_t ldb, T* C,
                     std::int64_t ldc, void (*done)(const void*, std::int64_t, std::int64_t), const void* ctx) {
    if (unit < 1 || a.M_ % unit != 0)
        fail("unit", "gemm_row_blocks: unit ", unit, " does not divide the ", a.M_, " rows of A");
    if (a.M_ == 0 || N == 0) return;
    if constexpr (std::is_same_v<T, float>) {
        if (const simd_gemm::Kernels* k = a.kernels_) {
            const std::int64_t rows = block_rows(a.M_, unit, N, sizeof(float), k->mr);
            if (rows >= a.M_) {  // one block: the plain GEMM, which packs B a panel at a time for a short A
                gemm<T>(a, false, N, T(1), B, ldb, T(0), C, ldc);
                done(ctx, 0, a.M_);
                return;
            }
            Buffer<float> bp(k->packed_b_size(a.K_, N));
            k->pack_b(false, a.K_, N, B, ldb, bp.data());
            const std::int64_t Mpad = (a.M_ + k->mr - 1) / k->mr * k->mr;
            for (std::int64_t r0 = 0; r0 < a.M_; r0 += rows) {
                const std::int64_t r1 = std::min(a.M_, r0 + rows);
                k->sgemm_packed(Mpad, r0, r1 - r0, N, a.K_, a.packed_.data(), bp.data(), C, ldc);
                done(ctx, r0, r1);
            }
            return;
        }
    }
    // A kept as it is (f64, OpenBLAS, an empty reduction): its rows in blocks of the size promised.
    const std::int64_t rows = gemm_block_rows(a.M_, unit, N, sizeof(T));
    for (std::int64_t r0 = 0; r0 < a.M_; r0 += rows) {
        const std::int64_t r1 = std::min(a.M_, r0 + rows);
        gemm<T>(a.trans_, false, r1 - r0, N, a.K_, T(1), a.trans_ ? a.A_ + r0 : a.A_ + r0 * a.lda_, a.lda_, B, ldb, T(0), C,
                ldc);
        done(ctx, r0, r1);
    }
}

template void gemm_row_blocks<float>(const PackedA<float>&, std::int64_t, std::int64_t, const float*, std::int64_t, float*,
                                     std::int64_t, void (*)(const void*, std::int64_t, std::int64_t), const void*);
template void gemm_row_blocks<double>(const PackedA<double>&, std::int64_t, std::int64_t, const double*, std::int64_t,
                                      double*, std::int64_t, void (*)(const void*, std::int64_t, std::int64_t), const void*);

template void gemm<float>(const PackedA<float>&, bool, std::int64_t, float, const float*, std::int64_t, float, float*,
                          std::int64_t);
template void gemm<double>(const PackedA<double>&, bool, std::int64_t, double, const double*, std::int64_t, double,
                           double*, std::int64_t);
template void gemm_from<float>(const PackedA<float>&, std::int64_t, float, const PanelSource<float>&, float, float*,
                               std::int64_t);
template void gemm_from<double>(const PackedA<double>&, std::int64_t, double, const PanelSource<double>&, double,
                                double*, std::int64_t);

void set_num_threads(int n) {
    if (n < 1 || n > kMaxThreads) fail("threads", "set_num_threads: thread count ", n, " is not in 1..", kMaxThreads);
    thread_setting() = n;
}

int num_threads() { return thread_setting().load(std::memory_order_relaxed); }

namespace {
std::atomic<bool> g_force_teams{false};
std::atomic<std::uint64_t> g_teams{0};
}  // namespace

void force_thread_teams(bool on) { g_force_teams = on; }

bool team_threads_sleep(std::string_view wait_policy) {
    std::string p(wait_policy);
    std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return p == "passive";
}

bool team_threads_sleep() {
    static const bool v = team_threads_sleep(env::text("OMP_WAIT_POLICY").value_or(""));
    return v;
}

namespace {
double min_flops(bool sleeping) { return sleeping ? kTeamMinFlops * kSleepingTeamFactor : kTeamMinFlops; }
}  // namespace

double team_min_flops(std::string_view wait_policy) { return min_flops(team_threads_sleep(wait_policy)); }

double team_min_flops() { return min_flops(team_threads_sleep()); }

int team_size(double work, double min_work) {
    const int n = work < min_work && !g_force_teams.load(std::memory_order_relaxed) ? 1 : num_threads();
    if (n > 1) g_teams.fetch_add(1, std::memory_order_relaxed);
    return n;
}

std::uint64_t teams_started() { return g_teams.load(std::memory_order_relaxed); }

// The header's gemm, defined once and instantiated for the two types it serves (explicit
// specialisations here came after PackedA's gemm had already used them: clang refuses that).
template <class T>
void gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, std::int64_t lda,
          const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
    gemm_impl(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

template void gemm<float>(bool, bool, std::int64_t, std::int64_t, std::int64_t, float, const float*, std::int64_t,
                          const float*, std::int64_t, float, float*, std::int64_t);
template void gemm<double>(bool, bool, std::int64_t, std::int64_t, std::int64_t, double, const double*, std::int64_t,
                           const double*, std::int64_t, double, double*, std::int64_t);

}  // namespace tg
