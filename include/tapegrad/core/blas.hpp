// Row-major GEMM for float and double: f32 on tapegrad's own xsimd kernels (AVX-512 or AVX2,
// chosen at run time; OpenBLAS on a processor with neither, or with TAPEGRAD_GEMM=openblas at
// configure time), f64 on OpenBLAS's CBLAS; B operands made on demand (PanelSource); and the
// one thread-count control that covers OpenBLAS and tapegrad's own parallel loops.
#pragma once
#include <cstdint>
#include <string_view>

#include "tapegrad/core/workspace.hpp"

namespace tg {

// C[M×N] = alpha · op(A) · op(B) + beta · C, row-major, op = transpose when the flag is set.
// Dimensions are int64 at the call sites; this checks that they fit BLAS's int.
template <class T>
void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A,
          std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc);

// A B operand [K × N] produced on demand, in panels: pack(ctx, k0, kc, j0, n, width, dst)
// writes columns [j0, j0 + n) of rows [k0, k0 + kc) as ceil(n / width) panels of `width`
// columns, panel p at dst + p·width·kc, element (k, c) of a panel at [k·width + c]; the
// last panel's columns past n are zeros. With width ≥ n it is a plain row-major block.
template <class T>
struct PanelSource {
    void (*pack)(const void* ctx, std::int64_t k0, std::int64_t kc, std::int64_t j0, std::int64_t n, std::int64_t width,
                 T* dst);
    const void* ctx;
};

// A PanelSource calling f(k0, kc, j0, n, width, dst); f must outlive the GEMM call.
template <class T, class F>
PanelSource<T> panel_source(const F& f) {
    return {[](const void* ctx, std::int64_t k0, std::int64_t kc, std::int64_t j0, std::int64_t n, std::int64_t width,
               T* dst) { (*static_cast<const F*>(ctx))(k0, kc, j0, n, width, dst); },
            &f};
}

// C[M×N] = alpha · op(A) · B + beta · C with B from `b`. On tapegrad's own f32 GEMM, B is made
// one packed panel at a time (no [K × N] buffer); otherwise it is made whole, then multiplied.
// Single-threaded (callers split the work).
template <class T>
void gemm_from(bool trans_a, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, std::int64_t lda,
               const PanelSource<T>& b, T beta, T* C, std::int64_t ldc);

// op(A) [M × K] packed once for several GEMMs that share it (a convolution's weight, used
// by every tile of a batch), so that each of them skips packing A. Only tapegrad's own f32
// GEMM packs; on OpenBLAS (f64, f32 without AVX2, the openblas build) it just keeps A, which
// must outlive it either way.
namespace simd_gemm {
struct Kernels;
}

template <class T>
class PackedA {
public:
    // `team` threads pack it (blocks of rows and depth: the same bits for any team).
    PackedA(bool trans, std::int64_t M, std::int64_t K, const T* A, std::int64_t lda, int team = 1);
    bool trans() const { return trans_; }
    std::int64_t rows() const { return M_; }
    std::int64_t depth() const { return K_; }

private:
    template <class U>
    friend void gemm(const PackedA<U>&, bool, std::int64_t, U, const U*, std::int64_t, U, U*, std::int64_t);
    template <class U>
    friend void gemm_from(const PackedA<U>&, std::int64_t, U, const PanelSource<U>&, U, U*, std::int64_t);
    template <class U>
    friend void gemm_row_blocks(const PackedA<U>&, std::int64_t, std::int64_t, const U*, std::int64_t, U*, std::int64_t,
                                void (*)(const void*, std::int64_t, std::int64_t), const void*);
    bool trans_;
    std::int64_t M_, K_;
    const T* A_;
    std::int64_t lda_;
    const simd_gemm::Kernels* kernels_ = nullptr;  // the GEMM table that packed it (null: not packed)
    Buffer<float> packed_;  // the GEMM kernel's packed layout
};

// C[M×N] = alpha · op(A) · op(B) + beta · C, and the same with B from a PanelSource, for a
// packed A. Single-threaded (callers split the work).
template <class T>
void gemm(const PackedA<T>& a, bool trans_b, std::int64_t N, T alpha, const T* B, std::int64_t ldb, T beta, T* C,
          std::int64_t ldc);
template <class T>
void gemm_from(const PackedA<T>& a, std::int64_t N, T alpha, const PanelSource<T>& b, T beta, T* C, std::int64_t ldc);

// C = op(A) · B (B [K × N] row-major) for a packed A, made a block of A's rows at a time so
// that the caller uses each block while it is still in cache (a transposed convolution's
// col2im): for each block [r0, r1) in order, whole multiples of `unit` rows (A's rows are),
// rows 0 .. r1 - r0 of C (ld ldc) get the block's product, then done(r0, r1) runs. On
// tapegrad's own f32 GEMM, B is packed once for all the blocks, of about 128 KiB of C each;
// otherwise the whole product is one block. C holds gemm_block_rows(A's rows, unit, N,
// sizeof(T)) rows: the rows of a block on the GEMM in use.
std::int64_t gemm_block_rows(std::int64_t M, std::int64_t unit, std::int64_t N, std::size_t elem_bytes);
template <class T>
void gemm_row_blocks(const PackedA<T>& a, std::int64_t unit, std::int64_t N, const T* B, std::int64_t ldb, T* C,
                     std::int64_t ldc, void (*done)(const void* ctx, std::int64_t r0, std::int64_t r1), const void* ctx);
// The same with done(r0, r1) any callable.
template <class T, class F>
void gemm_row_blocks(const PackedA<T>& a, std::int64_t unit, std::int64_t N, const T* B, std::int64_t ldb, T* C,
                     std::int64_t ldc, const F& done) {
    gemm_row_blocks<T>(
        a, unit, N, B, ldb, C, ldc,
        [](const void* ctx, std::int64_t r0, std::int64_t r1) { (*static_cast<const F*>(ctx))(r0, r1); }, &done);
}

// Threads used by GEMM and by tapegrad's loops, 1 to kMaxThreads: one OpenMP team; OpenBLAS
// itself stays single-threaded. Defaults to the core count (at most kMaxThreads), or
// TAPEGRAD_NUM_THREADS when set (read on first use; a value that is not an integer in
// 1..kMaxThreads is an error naming the variable). Safe to change while other threads
// compute: a running kernel call keeps the team it started with, the next call uses the
// new count. The bound keeps libgomp from failing to create (or crashing on) thousands of
// threads, which it reports with no error of ours.
inline constexpr int kMaxThreads = 256;
void set_num_threads(int n);
int num_threads();

// The team worth starting for `work` units of work when a team only pays off from
// `min_work` units on (below it: 1 thread, since a fork, barriers and a descheduled thread
// on a busy machine cost more than they save).
int team_size(double work, double min_work);

// Where part t of T equal parts of [0, n) starts: part t is [team_part(n, t, T),
// team_part(n, t + 1, T)), each thread of a team taking its own.
inline std::int64_t team_part(std::int64_t n, std::int64_t t, std::int64_t T) { return n * t / T; }

// How many times team_size has handed out a team of more than one thread since the start
// (tests use it to prove that the multi-threaded paths ran).
std::uint64_t teams_started();

// The least floating-point work (flops) of a GEMM-based step that is worth a team, for the
// GEMM split, the conv kernels and the phase form: team_min_flops(). Where the team's threads
// spin between parallel regions (libgomp's default), a start costs a few µs: kTeamMinFlops,
// about 100 µs on one core. Where they sleep (OMP_WAIT_POLICY=passive, as scripts/main.sh
// sets), every start and barrier wakes them, tens of µs under a hypervisor: kSleepingTeamFactor
// times as much, about a millisecond. Measured at 2 threads (bench/RESULTS.md): spinning, 16
// random layers of 1-50 MFLOP took 0.50-0.95 of one thread's time on 40 of 57 calls with
// teams from 2e6, but with another process busy on the machine a spinning team waits for a
// descheduled thread at every barrier: from 2e6 the autoencoder's epoch went 12.5 -> 18.7 s
// and the attention example 7.0 -> 19-33 s (GEMM splits), from 1e7 12.9 s and 7.0 s.
// Sleeping, teams below 5e7 lost up to 3.7× (the channel rows' barriers) and the
// autoencoder's epoch 5.0 -> 5.9 s on an idle machine.
constexpr double kTeamMinFlops = 1.0e7, kSleepingTeamFactor = 5;
// kTeamMinFlops, or kSleepingTeamFactor times it where OMP_WAIT_POLICY is passive (read once):
// team_min_flops(the variable's value, "" when unset; any case, as libgomp reads it).
double team_min_flops();
double team_min_flops(std::string_view wait_policy);
// Whether a team's threads sleep between parallel regions (OMP_WAIT_POLICY=passive, any
// case; read once), so that every barrier of a kernel is a wake-up: team_threads_sleep(the
// variable's value, "" when unset).
bool team_threads_sleep();
bool team_threads_sleep(std::string_view wait_policy);
// The same for a memory-bound pass (pooling, batch norm): the least number of values it
// visits for a team to pay off.
constexpr double kTeamMinValues = 2.5e5;

// Tests: with `on`, team_size starts a full team whatever the work, so that small cases
// reach the multi-threaded code paths. A startup-style setting, like set_num_threads.
void force_thread_teams(bool on);

}  // namespace tg
