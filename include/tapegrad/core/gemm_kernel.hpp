// tapegrad's own single-precision GEMM, written once with xsimd and compiled once per
// instruction set (core/gemm.avx2.cpp, core/gemm.avx512.cpp); tapegrad/core/simd.hpp picks one at
// run time. The structure is the classic Goto/BLIS one:
//   for each NC-wide block of B's columns, for each KC-deep slice of the reduction:
//     pack B[KC × NC] into NR-wide micro-panels (k-major), then for each MC-tall block of A:
//       pack A[MC × KC] into MR-tall micro-panels (k-major), and run the MR × NR micro-kernel
//       over the block: MR·NR/V accumulators in registers, one broadcast of A and NR/V
//       vector loads of B per k.
// The B micro-panel (KC·NR floats) stays in L1 while the A block streams from L2.
// Included only by the per-architecture translation units.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include <xsimd/xsimd.hpp>

#include "tapegrad/core/gemm_kernels.hpp"
#include "tapegrad/core/transpose_kernel.hpp"
#include "tapegrad/core/workspace.hpp"

namespace tg::simd_gemm {

template <class Arch>
struct Params {
    using V = xsimd::batch<float, Arch>;
    static constexpr int W = static_cast<int>(V::size);  // floats per vector
    static constexpr int NR = 2 * W;                    // micro-tile columns: two vectors
    static constexpr int MR = W == 16 ? 12 : 6;         // micro-tile rows: 24 (AVX-512) / 12 (AVX2) accumulators
    static constexpr std::int64_t KC = 256, MC = 14 * 12, NC = 3072;
};

// Copies a `w`-wide micro-panel: dst[k][0, w) = op(X)[k][0, w) for k in [0, kc), zero-padded
// to `width`. `rows` says op(X)[k][·] is contiguous (X[k·ld + ·]); otherwise it is the
// column X[· · ld + k], and the k loop runs outermost so every source row streams.
template <class Arch, int width>
inline void pack_panel(bool rows, std::int64_t kc, std::int64_t w, const float* x, std::int64_t ld, float* dst) {
    if (rows) {
        for (std::int64_t k = 0; k < kc; ++k, dst += width) {
            const float* src = x + k * ld;
            if (w == width) {
                std::memcpy(dst, src, sizeof(float) * width);
            } else {
                std::int64_t c = 0;
                for (; c < w; ++c) dst[c] = src[c];
                for (; c < width; ++c) dst[c] = 0.f;
            }
        }
        return;
    }
    const float* src[width];
    for (std::int64_t c = 0; c < width; ++c) src[c] = x + (c < w ? c : 0) * ld;
    // W columns of X (up to W rows of the panel, zero vectors past w) at a time, transposed
    // in registers into W rows of the panel; the last kc mod W rows element by element.
    using V = xsimd::batch<float, Arch>;
    constexpr std::int64_t W = V::size;
    std::int64_t k0 = 0;
    for (; k0 + W <= kc; k0 += W) {
        for (std::int64_t c0 = 0; c0 < width; c0 += W) {
            const std::int64_t cnt = std::min<std::int64_t>(W, width - c0);
            V v[W];
            for (std::int64_t i = 0; i < W; ++i) v[i] = c0 + i < w && i < cnt ? V::load_unaligned(src[c0 + i] + k0) : V(0.f);
            simd_kernel::transpose_in_registers<Arch, float>(v);
            // A panel narrower than W (MR rows): a whole vector per row, spilling into the
            // next row's first columns, which that row's store then overwrites; the last row
            // goes through a buffer.
            for (std::int64_t i = 0; i < W; ++i) {
                if (cnt == W || (c0 == 0 && i + 1 < W)) {
                    v[i].store_unaligned(dst + (k0 + i) * width + c0);
                } else {
                    alignas(64) float row[W];
                    v[i].store_aligned(row);
                    for (std::int64_t j = 0; j < cnt; ++j) dst[(k0 + i) * width + c0 + j] = row[j];
                }
            }
        }
    }
    dst += k0 * width;
    if (w == width) {
        for (std::int64_t k = k0; k < kc; ++k, dst += width)
#pragma GCC unroll 32
            for (int c = 0; c < width; ++c) dst[c] = src[c][k];
    } else {
        for (std::int64_t k = k0; k < kc; ++k, dst += width)
            for (int c = 0; c < width; ++c) dst[c] = c < w ? src[c][k] : 0.f;
    }
}

// dst[p][k][r]: the MR-row panels of rows [0, m) of op(A), k in [0, kc).
// op(A)[i][k] = trans ? a[k·lda + i] : a[i·lda + k]. Transposed, a panel's k runs down a's
// rows, one 48-byte piece a row: a panel at a time that read one piece per row lda apart
// (16 KiB for the transposed dcgan_g1's weight: a page, and a miss, per piece; its packing
// took 18% of the call), so kPackGroup panels' pieces of each row are copied together.
template <class Arch, int MR>
inline void pack_a(bool trans, std::int64_t m, std::int64_t kc, const float* a, std::int64_t lda, float* dst) {
    if (trans) {
        constexpr std::int64_t kPackGroup = 16;
        for (std::int64_t i0 = 0; i0 < m; i0 += kPackGroup * MR) {
            const std::int64_t i1 = m < i0 + kPackGroup * MR ? m : i0 + kPackGroup * MR;
            for (std::int64_t k = 0; k < kc; ++k) {
                const float* src = a + k * lda;
                for (std::int64_t i = i0; i < i1; i += MR) {
                    float* d = dst + i * kc + k * MR;  // panel i / MR starts at (i / MR)·MR·kc = i·kc
                    if (i + MR <= m) {
                        std::memcpy(d, src + i, sizeof(float) * MR);
                    } else {
                        std::int64_t r = 0;
                        for (; r < m - i; ++r) d[r] = src[i + r];
                        for (; r < MR; ++r) d[r] = 0.f;
                    }
                }
            }
        }
        return;
    }
    for (std::int64_t i0 = 0; i0 < m; i0 += MR, dst += MR * kc)
        pack_panel<Arch, MR>(false, kc, m - i0 < MR ? m - i0 : MR, a + i0 * lda, lda, dst);
}

// All of op(A) [M × K] packed for sgemm_blocked's `a_packed`: for each KC block of k, the
// MR-row panels of all M rows (padded to Mpad = ⌈M/MR⌉·MR), so block pc starts at pc·Mpad
// and rows [ic, ..) of it at pc·Mpad + ic·kc. Mpad·K floats.
template <class Arch>
void pack_a_all(bool ta, std::int64_t M, std::int64_t K, const float* a, std::int64_t lda, float* dst) {
    using P = Params<Arch>;
    const std::int64_t Mpad = (M + P::MR - 1) / P::MR * P::MR;
    for (std::int64_t pc = 0; pc < K; pc += P::KC)
        pack_a<Arch, P::MR>(ta, M, K - pc < P::KC ? K - pc : P::KC, ta ? a + pc * lda : a + pc, lda, dst + pc * Mpad);
}

// dst[q][k][c]: the NR-column panels of columns [0, n) of op(B), k in [0, kc).
template <class Arch, int NR>
inline void pack_b(bool trans, std::int64_t kc, std::int64_t n, const float* b, std::int64_t ldb, float* dst) {
    for (std::int64_t j0 = 0; j0 < n; j0 += NR, dst += NR * kc)  // op(B)[k][j] = trans ? b[j·ldb + k] : b[k·ldb + j]
        pack_panel<Arch, NR>(!trans, kc, n - j0 < NR ? n - j0 : NR, trans ? b + j0 * ldb : b + j0, ldb, dst);
}

// C[m × n] = alpha · Σ_k a[k][r] b[k][c] + beta · C for one micro-tile (m ≤ ROWS ≤ MR,
// n ≤ NV·W); beta == 0 never reads C. `a` holds MR-row panels (k-major, MR floats per k)
// of which the first ROWS rows are used, `b` NR-wide ones of which the first NV vectors.
template <class Arch, int ROWS, int NV>
inline void micro_kernel_fixed(std::int64_t kc, const float* __restrict a, const float* __restrict b, float* c,
                               std::int64_t ldc, float alpha, float beta, int m, int n) {
    using P = Params<Arch>;
    using V = typename P::V;
    constexpr int MR = P::MR, W = P::W;
    V acc[ROWS][NV];
    // A tile that adds into C (every KC block after the first) asks for C's lines now, so
    // they arrive while the k loop runs: C is often out of L2 (a weight gradient's dW, 2-8
    // MiB), and its loads after the loop waited on it. AVX2's 6 × 16 tile has half the k
    // loop to hide them behind: dcgan_g1's weight gradient 16.5 -> 12.9 ms, audio1d_k16s8's
    // 62.8 -> 52.7 at AVX2 (AVX-512 2-7% on the GEMM-bound layers).
    if (beta != 0.f)
        for (int r = 0; r < m; ++r)
            for (int v = 0; v < NV; ++v) __builtin_prefetch(c + r * ldc + v * W, 1);
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) acc[r][v] = V(0.f);
    for (std::int64_t k = 0; k < kc; ++k) {
        V bv[NV];
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) bv[v] = V::load_aligned(b + v * W);
#pragma GCC unroll 16
        for (int r = 0; r < ROWS; ++r) {
            const V ar(a[r]);
#pragma GCC unroll 2
            for (int v = 0; v < NV; ++v) acc[r][v] = xsimd::fma(ar, bv[v], acc[r][v]);
        }
        a += MR;
        b += 2 * W;
    }
    const V va(alpha), vb(beta);
    if (m == ROWS && n == NV * W) {
#pragma GCC unroll 16
        for (int r = 0; r < ROWS; ++r) {
            float* cr = c + r * ldc;
#pragma GCC unroll 2
            for (int v = 0; v < NV; ++v) {
                V o = acc[r][v] * va;
                if (beta != 0.f) o = xsimd::fma(V::load_unaligned(cr + v * W), vb, o);
                o.store_unaligned(cr + v * W);
            }
        }
        return;
    }
    alignas(64) float tile[NV * W];
    for (int r = 0; r < m; ++r) {
        for (int v = 0; v < NV; ++v) (acc[r][v] * va).store_aligned(tile + v * W);
        float* cr = c + r * ldc;
        for (int j = 0; j < n; ++j) cr[j] = beta != 0.f ? tile[j] + beta * cr[j] : tile[j];
    }
}

// The micro-tile for m ≤ MR rows and n ≤ NR columns: the full MR × NR kernel, or on an edge
// one that computes only the rows (a third, two thirds or all of MR) and vectors (one or
// two) that the tile has, so that a GEMM with M = 32 or N = 48 does not pay for 36 rows or
// 64 columns.
template <class Arch>
inline void micro_kernel(std::int64_t kc, const float* __restrict a, const float* __restrict b, float* c,
                         std::int64_t ldc, float alpha, float beta, int m, int n) {
    constexpr int MR = Params<Arch>::MR, W = Params<Arch>::W;
    if (n > W) {
        if (m > 2 * MR / 3) return micro_kernel_fixed<Arch, MR, 2>(kc, a, b, c, ldc, alpha, beta, m, n);
        if (m > MR / 3) return micro_kernel_fixed<Arch, 2 * MR / 3, 2>(kc, a, b, c, ldc, alpha, beta, m, n);
        return micro_kernel_fixed<Arch, MR / 3, 2>(kc, a, b, c, ldc, alpha, beta, m, n);
    }
    if (m > 2 * MR / 3) return micro_kernel_fixed<Arch, MR, 1>(kc, a, b, c, ldc, alpha, beta, m, n);
    if (m > MR / 3) return micro_kernel_fixed<Arch, 2 * MR / 3, 1>(kc, a, b, c, ldc, alpha, beta, m, n);
    return micro_kernel_fixed<Arch, MR / 3, 1>(kc, a, b, c, ldc, alpha, beta, m, n);
}

// The blocked GEMM; pack_b(k0, kc, j0, n, dst) packs op(B)[k0 .. k0+kc)[j0 .. j0+n) as
// NR-wide micro-panels. With `whole_blocks`, B is always packed a KC × NC block at a time
// (a B made on demand, e.g. by im2col, is cheaper to make in long runs than panel by panel).
// `a_packed`, if not null, is op(A) already packed by pack_a_all (A and lda are then unused).
template <class Arch, bool whole_blocks = false, class PackB>
void sgemm_blocked(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                   std::int64_t lda, const PackB& pack_b_block, float beta, float* C, std::int64_t ldc,
                   const float* a_packed) {
    using P = Params<Arch>;
    constexpr int MR = P::MR, NR = P::NR;
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.f) {  // C = beta · C
        for (std::int64_t i = 0; i < M; ++i)
            for (std::int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.f ? 0.f : beta * C[i * ldc + j];
        return;
    }
    const std::int64_t Mpad = (M + MR - 1) / MR * MR;  // rows of a KC block of pack_a_all's result
    const std::int64_t nc_max = N < P::NC ? N : P::NC;
    const std::int64_t kc_max = K < P::KC ? K : P::KC;
    // The A block and a single B micro-panel live in per-thread buffers kept for the thread's
    // life (counted by the workspace like any buffer); only a whole packed B block is per call.
    thread_local Buffer<float> a_block((P::MC + MR - 1) / MR * MR * P::KC), b_panel(NR * P::KC);
    const bool panel_at_a_time = M <= P::MC && !whole_blocks;
    Buffer<float> b_block(panel_at_a_time ? 0 : (nc_max + NR - 1) / NR * NR * kc_max);
    float* const ap_data = a_block.data();
    float* const bp_data = panel_at_a_time ? b_panel.data() : b_block.data();
    for (std::int64_t jc = 0; jc < N; jc += P::NC) {
        const std::int64_t nc = N - jc < P::NC ? N - jc : P::NC;
        for (std::int64_t pc = 0; pc < K; pc += P::KC) {
            const std::int64_t kc = K - pc < P::KC ? K - pc : P::KC;
            const float bet = pc == 0 ? beta : 1.f;
            if (M <= P::MC) {
                // One block of A: pack it once, then each B micro-panel right before the
                // micro-kernels that use it, so packed B never leaves L1 (or the whole block).
                const float* ap = a_packed ? a_packed + pc * Mpad : ap_data;
                if (!a_packed) pack_a<Arch, MR>(ta, M, kc, ta ? A + pc * lda : A + pc, lda, ap_data);
                if (!panel_at_a_time) pack_b_block(pc, kc, jc, nc, bp_data);
                for (std::int64_t jr = 0; jr < nc; jr += NR) {
                    const std::int64_t n = nc - jr < NR ? nc - jr : NR;
                    if (panel_at_a_time) pack_b_block(pc, kc, jc + jr, n, bp_data);
                    const float* bpanel = panel_at_a_time ? bp_data : bp_data + jr * kc;
                    for (std::int64_t ir = 0; ir < M; ir += MR)
                        micro_kernel<Arch>(kc, ap + ir * kc, bpanel, C + ir * ldc + jc + jr, ldc, alpha, bet,
                                           static_cast<int>(M - ir < MR ? M - ir : MR), static_cast<int>(n));
                }
                continue;
            }
            pack_b_block(pc, kc, jc, nc, bp_data);
            for (std::int64_t ic = 0; ic < M; ic += P::MC) {
                const std::int64_t mc = M - ic < P::MC ? M - ic : P::MC;
                const float* ap = a_packed ? a_packed + pc * Mpad + ic * kc : ap_data;
                if (!a_packed) pack_a<Arch, MR>(ta, mc, kc, ta ? A + pc * lda + ic : A + ic * lda + pc, lda, ap_data);
                for (std::int64_t jr = 0; jr < nc; jr += NR) {
                    const int n = static_cast<int>(nc - jr < NR ? nc - jr : NR);
                    const float* bpanel = bp_data + jr * kc;
                    for (std::int64_t ir = 0; ir < mc; ir += MR) {
                        const int m = static_cast<int>(mc - ir < MR ? mc - ir : MR);
                        micro_kernel<Arch>(kc, ap + ir * kc, bpanel, C + (ic + ir) * ldc + jc + jr, ldc, alpha,
                                           bet, m, n);
                    }
                }
            }
        }
    }
}

// All of op(B) [K × N] packed for sgemm_packed: for each KC block of k, the NR-column panels
// of all N columns (padded to Npad = ⌈N/NR⌉·NR), block pc at pc·Npad. Npad·K floats.
template <class Arch>
void pack_b_all(bool tb, std::int64_t K, std::int64_t N, const float* b, std::int64_t ldb, float* dst) {
    using P = Params<Arch>;
    const std::int64_t Npad = (N + P::NR - 1) / P::NR * P::NR;
    for (std::int64_t pc = 0; pc < K; pc += P::KC)
        pack_b<Arch, P::NR>(tb, K - pc < P::KC ? K - pc : P::KC, N, tb ? b + pc : b + pc * ldb, ldb, dst + pc * Npad);
}

// C[m × N] = rows [r0, r0 + m) of op(A) · op(B), both packed whole: op(A) [M × K] by pack_a_all
// (Mpad rows a KC block; r0 a multiple of MR), op(B) by pack_b_all. Every B micro-panel stays
// in L1 while the rows' A panels stream from L2, a KC block at a time.
template <class Arch>
void sgemm_packed(std::int64_t Mpad, std::int64_t r0, std::int64_t m, std::int64_t N, std::int64_t K, const float* ap,
                  const float* bp, float* C, std::int64_t ldc) {
    using P = Params<Arch>;
    constexpr int MR = P::MR, NR = P::NR;
    const std::int64_t Npad = (N + NR - 1) / NR * NR;
    for (std::int64_t pc = 0; pc < K; pc += P::KC) {
        const std::int64_t kc = K - pc < P::KC ? K - pc : P::KC;
        const float* ablock = ap + pc * Mpad + r0 * kc;
        for (std::int64_t jr = 0; jr < N; jr += NR) {
            const float* bpanel = bp + pc * Npad + jr * kc;
            const int n = static_cast<int>(N - jr < NR ? N - jr : NR);
            for (std::int64_t ir = 0; ir < m; ir += MR)
                micro_kernel<Arch>(kc, ablock + ir * kc, bpanel, C + ir * ldc + jr, ldc, 1.f, pc == 0 ? 0.f : 1.f,
                                   static_cast<int>(m - ir < MR ? m - ir : MR), n);
        }
    }
}

template <class Arch>
void sgemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
           std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
           const float* a_packed) {
    auto pack = [&](std::int64_t k0, std::int64_t kc, std::int64_t j0, std::int64_t n, float* dst) {
        pack_b<Arch, Params<Arch>::NR>(tb, kc, n, tb ? B + j0 * ldb + k0 : B + k0 * ldb + j0, ldb, dst);
    };
    sgemm_blocked<Arch>(ta, M, N, K, alpha, A, lda, pack, beta, C, ldc, a_packed);
}

template <class Arch>
void sgemm_from(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                std::int64_t lda, const PanelSource& b, float beta, float* C, std::int64_t ldc, const float* a_packed) {
    auto pack = [&](std::int64_t k0, std::int64_t kc, std::int64_t j0, std::int64_t n, float* dst) {
        b.pack(b.ctx, k0, kc, j0, n, Params<Arch>::NR, dst);
    };
    sgemm_blocked<Arch, true>(ta, M, N, K, alpha, A, lda, pack, beta, C, ldc, a_packed);
}

}  // namespace tg::simd_gemm

// The table of tapegrad/core/gemm_kernels.hpp for one architecture (used once per arch .cpp).
#define TG_INSTANTIATE_SGEMM(ARCH, NAME)                                                                  \
    namespace tg::simd_gemm {                                                                             \
    namespace {                                                                                           \
    std::int64_t packed_a_size(std::int64_t M, std::int64_t K) {                                          \
        constexpr std::int64_t MR = Params<ARCH>::MR;                                                     \
        return (M + MR - 1) / MR * MR * K;                                                                \
    }                                                                                                     \
    std::int64_t packed_b_size(std::int64_t K, std::int64_t N) {                                          \
        constexpr std::int64_t NR = Params<ARCH>::NR;                                                     \
        return (N + NR - 1) / NR * NR * K;                                                                \
    }                                                                                                     \
    }                                                                                                     \
    const Kernels NAME = {&sgemm<ARCH>,      &sgemm_from<ARCH>, &packed_a_size,        &pack_a_all<ARCH>, \
                          &packed_b_size,    &pack_b_all<ARCH>, &sgemm_packed<ARCH>,   Params<ARCH>::MR, \
                          static_cast<int>(Params<ARCH>::KC)}; \
    }
