// The per-axis walk shared by im2col/col2im and the direct kernels: for a tap k, the runs
// of output positions that share their outer coordinates, and on the last axis the range
// of each run that lands inside the input. Internal to ops/.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tapegrad/ops/conv_geometry.hpp"
#include "tapegrad/ops/vec.hpp"

namespace tg {

constexpr int kMaxD = kMaxSpatialAxes;

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

    // f(kf, off) for every tap kf of o-side position j, in order: off is the tap's i-side
    // spatial offset, or −1 where it reads outside the input. The channels-last walk.
    template <class F>
    void for_taps(std::int64_t j, F&& f) const {
        std::int64_t jm[kMaxD], k[kMaxD] = {};
        unravel(j, Y, jm);
        for (std::int64_t kf = 0; kf < Kn; ++kf) {
            f(kf, tap_offset(jm, k));
            for (int a = D - 1; a >= 0 && ++k[a] == K[a]; --a) k[a] = 0;  // the next tap, C order
        }
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
        const std::int64_t kbase = last_axis_base(k);
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

    // The last-axis o-side positions j whose tap at kbase (j·s + kbase) lies in [0, X):
    // [jmin, jmax). Two divisions; callers keep it per tap.
    struct Window {
        std::int64_t jmin, jmax;
        // [lo, hi) of t in [0, len) for the run of positions a0, a0 + 1, ...
        void clip(std::int64_t a0, std::int64_t len, std::int64_t& lo, std::int64_t& hi) const {
            lo = std::clamp<std::int64_t>(jmin - a0, 0, len);
            hi = std::clamp<std::int64_t>(jmax - a0, lo, len);
        }
    };
    // Tap k's offset on the last axis: o-side position j reads i-side position j·s + kbase.
    std::int64_t last_axis_base(const std::int64_t* k) const { return k[D - 1] * d[D - 1] - pb[D - 1]; }
    Window last_axis_window(std::int64_t kbase) const {
        const int L = D - 1;
        const std::int64_t sl = s[L];
        const std::int64_t top = X[L] - 1 - kbase;
        return {kbase >= 0 ? 0 : -kbase / sl + (-kbase % sl != 0), top < 0 ? 0 : top / sl + 1};
    }
};

// NCX planes, last axis split by stride phase. Along the last axis, tap k of o-side
// position j reads i-side position j·s + k·d − pb = (j + m)·s + φ with φ = (k·d − pb) mod s:
// in a plane stored phase-major (each i-side row as its s phase rows, phase φ holding
// positions φ, φ + s, ...), tap k pairs the o-side run [j0, j1) with the contiguous
// phase-row run [j0 + m, j1 + m). All three depthwise kernels are that pairing.
struct PhasePlane {
    const Axes& ax;
    std::int64_t XL, YL, s, rows_i, rows_o, KL, Kouter;
    std::vector<std::int64_t> phase_off;  // start of phase φ < min(s, X_L) within a phase-major row
    bool identity;                        // stride 1: phase-major is the plane itself

    explicit PhasePlane(const Axes& a)
        : ax(a), XL(a.X[a.D - 1]), YL(a.Y[a.D - 1]), s(a.s[a.D - 1]), KL(a.K[a.D - 1]), identity(s == 1) {
        rows_i = a.Xn / XL;
        rows_o = 1;
        for (int d = 0; d < a.D - 1; ++d) rows_o *= a.Y[d];
        Kouter = a.Kn / KL;
        std::int64_t off = 0;
        for (std::int64_t p = 0; p < s && p < XL; ++p) {
            phase_off.push_back(off);
            off += (XL - p + s - 1) / s;
        }
    }

    // Where i-side last-axis position (a0 + t)·s + kbase lands in a phase-major row: the
    // phase row of φ = kbase mod s, index a0 + t + m with m = (kbase − φ)/s.
    std::int64_t phase_index(std::int64_t a0, std::int64_t kbase) const {
        const std::int64_t p = floor_mod(kbase, s);
        return phase_off[static_cast<std::size_t>(p)] + a0 + (kbase - p) / s;
    }

    template <class T>
    void to_phase_major(const T* plane, T* pm) const {
        // Phase p of every row, pm[r·XL + phase_off[p] + q] = plane[r·XL + p + q·s]: one
        // strided copy per phase (a vector shuffle for s = 2).
        for (std::int64_t p = 0; p < s && p < XL; ++p) {
            const std::int64_t n = (XL - p + s - 1) / s;
            const vec::LaneRun run{p, phase_off[static_cast<std::size_t>(p)], n, 0, n};
            vec::copy_runs(&run, 1, plane, s, pm, rows_i, XL, XL);
        }
    }
    // A part of the plane: rows [r0, r1), and in each of them last-axis positions [x0, x1),
    // where x0 is a multiple of s and x1 one too or XL (see band()).
    struct Band {
        std::int64_t r0, r1, x0, x1;
    };
    Band whole() const { return {0, rows_i, 0, XL}; }

    // pm = 0 on a band, in phase-major order.
    template <class T>
    void zero(T* pm, const Band& b) const {
        for (std::int64_t r = b.r0; r < b.r1; ++r)
            for (std::int64_t p = 0; p < s && p < b.x1; ++p) {
                T* row = pm + r * XL + phase_off[static_cast<std::size_t>(p)];
                std::fill(row + b.x0 / s, row + (b.x1 - p + s - 1) / s, T(0));
            }
    }

    // plane = pm (add = false) or plane += pm (add = true), back in natural order, on a band
    // (default the whole plane).
    template <class T>
    void from_phase_major(const T* pm, T* plane, bool add = false) const {
        from_phase_major(pm, plane, add, whole());
    }
    template <class T>
    void from_phase_major(const T* pm, T* plane, bool add, const Band& b) const {
        plane += b.r0 * XL;
        pm += b.r0 * XL;
        if (s == 2 && XL % 2 == 0) {  // two equal phase rows: one vector interleave per row
            for (std::int64_t r = b.r0; r < b.r1; ++r, plane += XL, pm += XL)
                vec::interleave2((b.x1 - b.x0) / 2, pm + b.x0 / 2, pm + XL / 2 + b.x0 / 2, plane + b.x0, add);
            return;
        }
        // Every phase row: one interleave of their common length, the rest element by element.
        if (s <= vec::kInterleaveMaxWays && XL / s >= vec::kInterleaveMin) {
            const T* ph[vec::kInterleaveMaxWays];
            for (std::int64_t r = b.r0; r < b.r1; ++r, plane += XL, pm += XL) {
                std::int64_t m = b.x1 - b.x0;
                for (std::int64_t p = 0; p < s; ++p) {
                    ph[p] = pm + phase_off[static_cast<std::size_t>(p)] + b.x0 / s;
                    m = std::min(m, b.x1 > p + b.x0 ? (b.x1 - p - b.x0 + s - 1) / s : 0);
                }
                vec::interleave(m, s, ph, plane + b.x0, add);
                for (std::int64_t x = b.x0 + m * s; x < b.x1; ++x) {
                    const T v = ph[(x - b.x0) % s][(x - b.x0) / s];
                    plane[x] = add ? plane[x] + v : v;
                }
            }
            return;
        }
        // `add` decided once, outside the loops: left inside, whether the compiler hoisted it
        // varied from build to build (k4 s3 layers' col2im 1.3x slower in one).
        auto rows = [&](auto add) {
            for (std::int64_t r = b.r0; r < b.r1; ++r, plane += XL, pm += XL)
                for (std::int64_t p = 0; p < s && p < XL; ++p) {
                    const T* src = pm + phase_off[static_cast<std::size_t>(p)] + b.x0 / s;
                    T* dst = plane + p + b.x0;
                    const std::int64_t n = b.x1 > p + b.x0 ? (b.x1 - p - b.x0 + s - 1) / s : 0;
                    for (std::int64_t q = 0; q < n; ++q) {
                        if constexpr (decltype(add)::value) dst[q * s] += src[q];
                        else dst[q * s] = src[q];
                    }
                }
        };
        if (add) rows(std::true_type{});
        else rows(std::false_type{});
    }

    // f(kf, o-side offset of the run, phase-major i-side offset of its partner, length) for
    // every tap and o-side row, in a fixed order (rows, outer taps, last-axis taps).
    template <class F>
    void for_tap_runs(F&& f) const {
        const int L = ax.D - 1;
        // Per last-axis tap: the o-side run [j0, j0 + len) and its phase-row partner offset.
        struct LastTap {
            std::int64_t j0, len, ip;
        };
        std::vector<LastTap> last;
        for (std::int64_t kl = 0; kl < KL; ++kl) {
            const std::int64_t v = kl * ax.d[L] - ax.pb[L], p = floor_mod(v, s), m = (v - p) / s;
            const std::int64_t Qp = XL > p ? (XL - p + s - 1) / s : 0;
            const std::int64_t j0 = std::max<std::int64_t>(0, -m), j1 = std::min(YL, Qp - m);
            last.push_back(j0 < j1 ? LastTap{j0, j1 - j0, phase_off[static_cast<std::size_t>(p)] + j0 + m} : LastTap{0, 0, 0});
        }
        std::int64_t jo[kMaxD] = {}, ko[kMaxD] = {};
        for (std::int64_t row = 0; row < rows_o; ++row) {
            std::int64_t rest = row;
            for (int a = L - 1; a >= 0; --a) { jo[a] = rest % ax.Y[a]; rest /= ax.Y[a]; }
            for (int a = 0; a < L; ++a) ko[a] = 0;
            for (std::int64_t kq = 0; kq < Kouter; ++kq) {
                std::int64_t irow = 0;
                bool ok = true;
                for (int a = 0; a < L; ++a) {
                    const std::int64_t pos = jo[a] * ax.s[a] + ko[a] * ax.d[a] - ax.pb[a];
                    if (pos < 0 || pos >= ax.X[a]) { ok = false; break; }
                    irow = irow * ax.X[a] + pos;
                }
                if (ok)
                    for (std::int64_t kl = 0; kl < KL; ++kl) {
                        const LastTap& t = last[static_cast<std::size_t>(kl)];
                        if (t.len) f(kq * KL + kl, row * YL + t.j0, irow * XL + t.ip, t.len);
                    }
                for (int a = L - 1; a >= 0 && ++ko[a] == ax.K[a]; --a) ko[a] = 0;
            }
        }
    }
};

}  // namespace tg
