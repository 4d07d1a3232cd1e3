// The transposed convolution by output phases (the "sub-pixel" decomposition), NCX.
//
// On an axis with stride s, dilation d and begin pad pb, tap k of o-side position j lands
// on i-side position x = j·s + k·d − pb. Split x by its phase φ = x mod s: x = q·s + φ. The
// taps that reach phase φ are those with (k·d − pb − φ) divisible by s, each at a fixed
// shift m_k = (k·d − pb − φ)/s, and then
//     r[q·s + φ] = Σ_{k reaching φ} Σ_o W[o, i, k] · u[o, q − m_k]
// is a stride-1 correlation of u: one dense GEMM per phase (and group), over every image
// at once, K = Og·(taps of the phase), with u's patches made inside the GEMM's packing.
// Every output element is written exactly once (a phase no tap reaches is written as
// zeros), with no column buffer and no overlapping scatter-add. For stride 1 it is the one
// phase, a correlation with the flipped kernel; for kernel = stride (U-Net k2s2) each
// phase has one tap and the op is s^D plain GEMMs.
#pragma once
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg {

// r (i-side, every element written) from u (o-side) and W[G, Og, Ig, K...]; NCX only.
template <class T>
void conv_transposed_phases(const ConvGeometry& g, const T* u, const T* w, T* r);

}  // namespace tg
