// The per-axis walk shared by im2col/col2im and the direct kernels: for a tap k, the runs
// of output positions that share their outer coordinates, and on the last axis the range
// of each run that lands inside the input. Internal to ops/.
#pragma once
#include <algorithm>
#include <cstdint>

#include "ops/conv_geometry.hpp"

namespace tg {

constexpr int kMaxD = 12;

// Per-axis numbers of the geometry in a form the inner loops can index quickly.
struct Axes {
    int D;
    const std::int64_t *X, *Y, *K, *s, *d, *pb;
    std::int64_t in_stride[kMaxD];  // element stride of each spatial axis of the i-side
    std::int64_t Xn, Kn, Ctot;      // ∏X, ∏K, channels of the i-side tensor

    explicit Axes(const ConvGeometry& g)
        : D(g.D()), X(g.in_size.data()), Y(g.out_size.data()), K(g.kernel.data()), s(g.stride.data()),
          d(g.dilation.data()), pb(g.pad_begin.data()), Xn(g.in_numel()), Kn(g.kernel_numel()), Ctot(g.G * g.Ig) {
        if (D > kMaxD) fail("geometry", "im2col: ", D, " spatial axes, at most ", kMaxD, " are supported");
        std::int64_t acc = g.layout == Layout::NXC ? Ctot : 1;
        for (int a = D - 1; a >= 0; --a) { in_stride[a] = acc; acc *= X[a]; }
    }

    void unravel(std::int64_t flat, const std::int64_t* dims, std::int64_t* idx) const {
        for (int a = D - 1; a >= 0; --a) { idx[a] = flat % dims[a]; flat /= dims[a]; }
    }

    // Offset of tap k at output position jm in the i-side (spatial part), or −1 if outside.
    std::int64_t tap_offset(const std::int64_t* jm, const std::int64_t* k) const {
        std::int64_t off = 0;
        for (int a = 0; a < D; ++a) {
            const std::int64_t pos = jm[a] * s[a] + k[a] * d[a] - pb[a];
            if (pos < 0 || pos >= X[a]) return -1;
            off += pos * in_stride[a];
        }
        return off;
    }

    // Calls f(at, len, ok, off, a0, kbase) for each run of positions [p0, p1) that share all
    // outer coordinates: `at` is the run's index from p0, `ok` says the outer coordinates hit
    // the input for tap k, `off` is their offset, `a0` the run's first last-axis index and
    // `kbase` = k·d − pb on the last axis.
    template <class F>
    void for_runs(std::int64_t p0, std::int64_t p1, const std::int64_t* k, F&& f) const {
        std::int64_t jm[kMaxD];
        unravel(p0, Y, jm);
        const int L = D - 1;
        const std::int64_t kbase = k[L] * d[L] - pb[L];
        for (std::int64_t j = p0; j < p1;) {
            const std::int64_t len = std::min(Y[L] - jm[L], p1 - j);
            bool ok = true;
            std::int64_t off = 0;
            for (int a = 0; a < L; ++a) {
                const std::int64_t pos = jm[a] * s[a] + k[a] * d[a] - pb[a];
                if (pos < 0 || pos >= X[a]) { ok = false; break; }
                off += pos * in_stride[a];
            }
            f(j - p0, len, ok, off, jm[L], kbase);
            j += len;
            jm[L] += len;
            for (int a = L; a > 0 && jm[a] >= Y[a]; --a) { jm[a] = 0; ++jm[a - 1]; }
        }
    }

    // The range [lo, hi) of t in [0, len) for which (a0+t)·s + kbase lies in [0, X) on the
    // last axis.
    void valid_range(std::int64_t a0, std::int64_t len, std::int64_t kbase, std::int64_t& lo, std::int64_t& hi) const {
        const int L = D - 1;
        const std::int64_t sl = s[L];
        const std::int64_t jmin = kbase >= 0 ? 0 : -kbase / sl + (-kbase % sl != 0);
        const std::int64_t top = X[L] - 1 - kbase;
        const std::int64_t jmax_excl = top < 0 ? 0 : top / sl + 1;
        lo = std::clamp<std::int64_t>(jmin - a0, 0, len);
        hi = std::clamp<std::int64_t>(jmax_excl - a0, lo, len);
    }
};

}  // namespace tg
