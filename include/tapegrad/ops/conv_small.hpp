// Direct kernels for layers with few channels per group (NCX, not depthwise), where the
// GEMM of im2col is a thin product whose column buffer costs more than its arithmetic.
//
// The phase grid. On an axis with stride s, tap k of o-side position j reads i-side
// position j·s + k·d − pb = (j + m_k)·s + φ_k with φ_k = (k·d − pb) mod s. Each i-side
// plane is stored as s^D phase planes (phase φ holds positions q·s + φ, zeros outside the
// input), every plane and every o-side grid with the same row pitch per axis (P_a
// positions: enough for every q any tap or the result reaches). On that grid a position is
// one flat index t, and tap k reads phase plane φ_k at t + off_k for every o-side
// position: a convolution is a correlation of flat vectors, whose register tiles run
// across row ends (the positions that land in a row's padding are computed and dropped, or
// are zeros on the o-side). So
//   forward:     y[o][t]        = Σ_i Σ_k W[o, i, k] · x_φk[i][t + off_k]
//   transposed:  r_φ[i][t]      = Σ_o Σ_{k: φk = φ} W[o, i, k] · u[o][t − off_k]
//   weight grad: dW[o, i, k]   += Σ_t u[o][t] · x_φk[i][t + off_k]
// with no column buffer, no scatter-add and every padding tap multiplied by a zero plane
// element only where the im2col path multiplies one too.
//
// Non-finite values: the transposed kernel multiplies the weight by the zeros around u,
// and the weight gradient multiplies x by them, products the reference never forms; so
// those two decline (return false) when that operand holds an infinity or a NaN, and the
// caller runs the GEMM path. (The weight gradient checks x image by image as its copies
// read it, and declines after the sums, which it then leaves unused: a pass over all of x
// before them cost depthwise_c128 a quarter of its time at N 64.)
#pragma once
#include <cstdint>
#include <vector>

#include "tapegrad/ops/conv_axes.hpp"
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg {

struct PhaseGrid {
    int D = 0;
    std::int64_t s[kMaxD], qlo[kMaxD], P[kMaxD], pitch[kMaxD], phase_pitch[kMaxD];
    std::int64_t phases = 1;  // ∏ s: phase planes per i-side channel
    std::int64_t PS = 1;      // ∏ P: one phase plane, one o-side grid
    std::int64_t T = 1;       // o-side positions computed: the flat index of the last one, + 1
    std::int64_t i_lo = 0, i_hi = 1;  // the phase-plane positions of i-side values: [i_lo, i_hi)
    std::int64_t front = 0;   // zeros before an o-side grid the transposed kernel reads (the largest tap offset)
    std::vector<std::int64_t> tap_phase, tap_off;  // per tap (C order): its phase plane and flat offset

    explicit PhaseGrid(const ConvGeometry& g);
    // Bytes of the grids of one image (its i-side phase planes and o-side grids), for
    // elements of eb bytes.
    std::int64_t image_bytes(const ConvGeometry& g, std::int64_t eb) const;
};

// Same roles as the im2col kernels (ops/conv_exec.hpp): x i-side, u/y o-side, w the weight.
// Every element of y and r is written; dW is accumulated. `team` threads at most.
template <class T> void small_forward(const ConvGeometry& g, const T* x, const T* w, T* y, int team);
template <class T> bool small_transposed(const ConvGeometry& g, const T* u, const T* w, T* r, int team);
// Images are summed in chunks fixed by the geometry, chunk results in order, so any team
// gives the same bits.
template <class T> bool small_weight_grad(const ConvGeometry& g, const T* x, const T* u, T* dw, int team);

}  // namespace tg
