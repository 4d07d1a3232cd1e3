#include "ops/im2col.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/blas.hpp"

namespace tg {

namespace {

// Per-axis numbers of the geometry in a form the inner loops can index quickly.
struct Axes {
    int D;
    std::vector<std::int64_t> X, Y, K, s, d, pb;
    std::vector<std::int64_t> in_stride;  // element stride of each spatial axis (channels excluded)
    std::int64_t Xn, P, Kn, Ctot;         // ∏X, ∏Y, ∏K, channels of the i-side tensor

    explicit Axes(const ConvGeometry& g)
        : D(g.D()), X(g.in_size), Y(g.out_size), K(g.kernel), s(g.stride), d(g.dilation), pb(g.pad_begin),
          in_stride(D), Xn(g.in_numel()), P(g.out_numel()), Kn(g.kernel_numel()), Ctot(g.G * g.Ig) {
        std::int64_t acc = g.layout == Layout::NXC ? Ctot : 1;
        for (int a = D - 1; a >= 0; --a) { in_stride[a] = acc; acc *= X[a]; }
    }

    void unravel(std::int64_t flat, const std::vector<std::int64_t>& dims, std::int64_t* idx) const {
        for (int a = D - 1; a >= 0; --a) { idx[a] = flat % dims[a]; flat /= dims[a]; }
    }

    // Calls f(seg_start, seg_len, ok, off, a0, kbase) for each run of positions [p0, p1) that
    // share all outer coordinates: `ok` says the outer coordinates hit the input for tap k,
    // `off` is their element offset, `a0` the first last-axis output index of the run and
    // `kbase` = k·d − pb on the last axis.
    template <class F>
    void for_runs(std::int64_t p0, std::int64_t p1, const std::int64_t* k, F&& f) const {
        std::int64_t jm[16];
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

    // The range [lo, hi) of t in [0, len) for which (a0+t)·s + kbase lies in [0, X) on the last axis.
    void valid_range(std::int64_t a0, std::int64_t len, std::int64_t kbase, std::int64_t& lo, std::int64_t& hi) const {
        const int L = D - 1;
        const std::int64_t sl = s[L];
        // smallest jj with jj·s + kbase >= 0, largest with jj·s + kbase <= X−1
        const std::int64_t jmin = kbase >= 0 ? 0 : (-kbase + sl - 1) / sl;
        const std::int64_t top = X[L] - 1 - kbase;
        const std::int64_t jmax_excl = top < 0 ? 0 : top / sl + 1;
        lo = std::clamp<std::int64_t>(jmin - a0, 0, len);
        hi = std::clamp<std::int64_t>(jmax_excl - a0, lo, len);
    }
};

}  // namespace

template <class T>
void im2col(const ConvGeometry& g, const T* x, std::int64_t n0, std::int64_t nb, std::int64_t group, std::int64_t p0,
            std::int64_t p1, T* col) {
    const Axes ax(g);
    const std::int64_t Pt = p1 - p0, Ig = g.Ig, R = g.R(), cols = nb * Pt;
    const int L = ax.D - 1;
    const std::int64_t sl = ax.s[L];
    if (g.layout == Layout::NCX) {
#pragma omp parallel for collapse(2) schedule(static)
        for (std::int64_t r = 0; r < R; ++r) {
            for (std::int64_t ni = 0; ni < nb; ++ni) {
                std::int64_t k[16];
                ax.unravel(r % ax.Kn, ax.K, k);
                const std::int64_t i = r / ax.Kn;
                const T* xc = x + ((n0 + ni) * ax.Ctot + group * Ig + i) * ax.Xn;
                T* row = col + r * cols + ni * Pt;
                ax.for_runs(p0, p1, k, [&](std::int64_t at, std::int64_t len, bool ok, std::int64_t off, std::int64_t a0,
                                           std::int64_t kbase) {
                    T* dst = row + at;
                    if (!ok) { std::fill_n(dst, len, T(0)); return; }
                    std::int64_t lo, hi;
                    ax.valid_range(a0, len, kbase, lo, hi);
                    std::fill_n(dst, lo, T(0));
                    std::fill(dst + hi, dst + len, T(0));
                    if (lo == hi) return;
                    const T* src = xc + off + (a0 + lo) * sl + kbase;
                    if (sl == 1) std::memcpy(dst + lo, src, static_cast<std::size_t>(hi - lo) * sizeof(T));
                    else for (std::int64_t t = lo; t < hi; ++t) dst[t] = src[(t - lo) * sl];
                });
            }
        }
        return;
    }
    // NXC: one row per position, R = ∏K runs of Ig contiguous channels.
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < cols; ++c) {
        const std::int64_t ni = c / Pt, j = p0 + c % Pt;
        std::int64_t jm[16], k[16];
        ax.unravel(j, ax.Y, jm);
        const T* xn = x + (n0 + ni) * ax.Xn * ax.Ctot + group * Ig;
        T* dst = col + c * R;
        for (std::int64_t kf = 0; kf < ax.Kn; ++kf, dst += Ig) {
            ax.unravel(kf, ax.K, k);
            bool ok = true;
            std::int64_t off = 0;
            for (int a = 0; a < ax.D; ++a) {
                const std::int64_t pos = jm[a] * ax.s[a] + k[a] * ax.d[a] - ax.pb[a];
                if (pos < 0 || pos >= ax.X[a]) { ok = false; break; }
                off += pos * ax.in_stride[a];
            }
            if (ok) std::memcpy(dst, xn + off, static_cast<std::size_t>(Ig) * sizeof(T));
            else std::fill_n(dst, Ig, T(0));
        }
    }
}

template <class T>
void col2im(const ConvGeometry& g, const T* col, std::int64_t n0, std::int64_t nb, std::int64_t group,
            std::int64_t p0, std::int64_t p1, T* x) {
    const Axes ax(g);
    const std::int64_t Pt = p1 - p0, Ig = g.Ig, R = g.R(), cols = nb * Pt;
    const int L = ax.D - 1;
    const std::int64_t sl = ax.s[L];
    if (g.layout == Layout::NCX) {
        // One (image, channel) pair per task: its ∏K rows all land in that channel only, so
        // tasks never write the same element and the sum order is fixed (taps in order).
#pragma omp parallel for collapse(2) schedule(static)
        for (std::int64_t ni = 0; ni < nb; ++ni) {
            for (std::int64_t i = 0; i < Ig; ++i) {
                T* xc = x + ((n0 + ni) * ax.Ctot + group * Ig + i) * ax.Xn;
                std::int64_t k[16];
                for (std::int64_t kf = 0; kf < ax.Kn; ++kf) {
                    ax.unravel(kf, ax.K, k);
                    const T* row = col + (i * ax.Kn + kf) * cols + ni * Pt;
                    ax.for_runs(p0, p1, k, [&](std::int64_t at, std::int64_t len, bool ok, std::int64_t off,
                                               std::int64_t a0, std::int64_t kbase) {
                        if (!ok) return;
                        std::int64_t lo, hi;
                        ax.valid_range(a0, len, kbase, lo, hi);
                        if (lo == hi) return;
                        const T* src = row + at;
                        T* dst = xc + off + (a0 + lo) * sl + kbase;
                        for (std::int64_t t = lo; t < hi; ++t) dst[(t - lo) * sl] += src[t];
                    });
                }
            }
        }
        return;
    }
    // NXC: split the Ig channels of each image into chunks; a chunk's elements are written
    // by one task only, in (position, tap) order.
    const std::int64_t chunks = nb >= num_threads() ? 1 : std::min<std::int64_t>(Ig, num_threads());
#pragma omp parallel for collapse(2) schedule(static)
    for (std::int64_t ni = 0; ni < nb; ++ni) {
        for (std::int64_t ch = 0; ch < chunks; ++ch) {
            const std::int64_t c0 = Ig * ch / chunks, c1 = Ig * (ch + 1) / chunks;
            T* xn = x + (n0 + ni) * ax.Xn * ax.Ctot + group * Ig;
            std::int64_t jm[16], k[16];
            for (std::int64_t j = p0; j < p1; ++j) {
                ax.unravel(j, ax.Y, jm);
                const T* src = col + (ni * Pt + (j - p0)) * R;
                for (std::int64_t kf = 0; kf < ax.Kn; ++kf, src += Ig) {
                    ax.unravel(kf, ax.K, k);
                    bool ok = true;
                    std::int64_t off = 0;
                    for (int a = 0; a < ax.D; ++a) {
                        const std::int64_t pos = jm[a] * ax.s[a] + k[a] * ax.d[a] - ax.pb[a];
                        if (pos < 0 || pos >= ax.X[a]) { ok = false; break; }
                        off += pos * ax.in_stride[a];
                    }
                    if (!ok) continue;
                    T* dst = xn + off;
                    for (std::int64_t c = c0; c < c1; ++c) dst[c] += src[c];
                }
            }
        }
    }
}

template void im2col<float>(const ConvGeometry&, const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                            std::int64_t, float*);
template void im2col<double>(const ConvGeometry&, const double*, std::int64_t, std::int64_t, std::int64_t,
                             std::int64_t, std::int64_t, double*);
template void col2im<float>(const ConvGeometry&, const float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                            std::int64_t, float*);
template void col2im<double>(const ConvGeometry&, const double*, std::int64_t, std::int64_t, std::int64_t,
                             std::int64_t, std::int64_t, double*);

}  // namespace tg
