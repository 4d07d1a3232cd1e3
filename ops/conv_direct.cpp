#include "ops/conv_direct.hpp"

#include <vector>

#include "core/blas.hpp"
#include "ops/conv_axes.hpp"

namespace tg {

namespace {

// Calls f(run destination index in the o-side plane `at`, i-side offset of its first
// element, length, i-side stride) for every run of positions that tap kf reads inside the
// input (NCX planes).
template <class F>
void for_valid_runs(const Axes& ax, std::int64_t P, std::int64_t kf, F&& f) {
    std::int64_t k[kMaxD];
    ax.unravel(kf, ax.K, k);
    const std::int64_t sl = ax.s[ax.D - 1];
    ax.for_runs(0, P, k, [&](std::int64_t at, std::int64_t len, bool ok, std::int64_t off, std::int64_t a0,
                             std::int64_t kbase) {
        if (!ok) return;
        std::int64_t lo, hi;
        ax.valid_range(a0, len, kbase, lo, hi);
        if (lo < hi) f(at + lo, off + (a0 + lo) * sl + kbase, hi - lo, sl);
    });
}

// Channels-last weights as [∏K][G] so the channel loop reads them contiguously.
template <class T>
std::vector<T> taps_major(const ConvGeometry& g, const T* w) {
    const std::int64_t Kn = g.kernel_numel();
    std::vector<T> wt(static_cast<std::size_t>(Kn * g.G));
    for (std::int64_t c = 0; c < g.G; ++c)
        for (std::int64_t k = 0; k < Kn; ++k) wt[k * g.G + c] = w[c * Kn + k];
    return wt;
}

std::int64_t part(std::int64_t n, std::int64_t t, std::int64_t T) { return n * t / T; }

// Multiply-adds of a depthwise call; about a millisecond's worth is needed for a team.
int threads_for(const ConvGeometry& g) {
    return team_size(static_cast<double>(g.N) * g.G * g.out_numel() * g.kernel_numel(), 1e6);
}

}  // namespace

template <class T>
void depthwise_forward(const ConvGeometry& g, const T* x, const T* w, T* y) {
    const Axes ax(g);
    const std::int64_t P = g.out_numel(), G = g.G, N = g.N, Kn = ax.Kn;
    const int nt = threads_for(g);
    if (g.layout == Layout::NCX) {
#pragma omp parallel for num_threads(nt) schedule(static)
        for (std::int64_t plane = 0; plane < N * G; ++plane) {
            const T* xp = x + plane * ax.Xn;
            T* yp = y + plane * P;
            const T* wc = w + (plane % G) * Kn;
            for (std::int64_t kf = 0; kf < Kn; ++kf) {
                const T wk = wc[kf];
                for_valid_runs(ax, P, kf, [&](std::int64_t at, std::int64_t src, std::int64_t len, std::int64_t sl) {
                    for (std::int64_t t = 0; t < len; ++t) yp[at + t] += wk * xp[src + t * sl];
                });
            }
        }
        return;
    }
    const std::vector<T> wt = taps_major(g, w);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t row = 0; row < N * P; ++row) {
        const std::int64_t n = row / P;
        std::int64_t jm[kMaxD], k[kMaxD];
        ax.unravel(row % P, ax.Y, jm);
        T* yr = y + row * G;
        for (std::int64_t kf = 0; kf < Kn; ++kf) {
            ax.unravel(kf, ax.K, k);
            const std::int64_t off = ax.tap_offset(jm, k);
            if (off < 0) continue;
            const T* xr = x + n * ax.Xn * G + off;
            const T* wr = wt.data() + kf * G;
            for (std::int64_t c = 0; c < G; ++c) yr[c] += wr[c] * xr[c];
        }
    }
}

template <class T>
void depthwise_transposed(const ConvGeometry& g, const T* u, const T* w, T* r) {
    const Axes ax(g);
    const std::int64_t P = g.out_numel(), G = g.G, N = g.N, Kn = ax.Kn;
    const int nt = threads_for(g);
    if (g.layout == Layout::NCX) {
        // A plane's taps all land in its own plane: planes never collide.
#pragma omp parallel for num_threads(nt) schedule(static)
        for (std::int64_t plane = 0; plane < N * G; ++plane) {
            const T* up = u + plane * P;
            T* rp = r + plane * ax.Xn;
            const T* wc = w + (plane % G) * Kn;
            for (std::int64_t kf = 0; kf < Kn; ++kf) {
                const T wk = wc[kf];
                for_valid_runs(ax, P, kf, [&](std::int64_t at, std::int64_t dst, std::int64_t len, std::int64_t sl) {
                    for (std::int64_t t = 0; t < len; ++t) rp[dst + t * sl] += wk * up[at + t];
                });
            }
        }
        return;
    }
    // Channels last: positions of one image collide, so split images and channel ranges.
    const std::vector<T> wt = taps_major(g, w);
    const std::int64_t chunks = N >= nt ? 1 : std::min<std::int64_t>(G, (nt + N - 1) / N);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t unit = 0; unit < N * chunks; ++unit) {
        const std::int64_t n = unit / chunks, ch = unit % chunks;
        const std::int64_t c0 = part(G, ch, chunks), c1 = part(G, ch + 1, chunks);
        std::int64_t jm[kMaxD], k[kMaxD];
        for (std::int64_t j = 0; j < P; ++j) {
            ax.unravel(j, ax.Y, jm);
            const T* ur = u + (n * P + j) * G;
            for (std::int64_t kf = 0; kf < Kn; ++kf) {
                ax.unravel(kf, ax.K, k);
                const std::int64_t off = ax.tap_offset(jm, k);
                if (off < 0) continue;
                T* rr = r + n * ax.Xn * G + off;
                const T* wr = wt.data() + kf * G;
                for (std::int64_t c = c0; c < c1; ++c) rr[c] += wr[c] * ur[c];
            }
        }
    }
}

template <class T>
void depthwise_weight_grad(const ConvGeometry& g, const T* x, const T* u, T* dw) {
    const Axes ax(g);
    const std::int64_t P = g.out_numel(), G = g.G, N = g.N, Kn = ax.Kn;
    const int nt = threads_for(g);
    if (g.layout == Layout::NCX) {
        // One group per task, summing over images and runs in a fixed order.
#pragma omp parallel for num_threads(nt) schedule(static)
        for (std::int64_t c = 0; c < G; ++c) {
            for (std::int64_t kf = 0; kf < Kn; ++kf) {
                T acc = 0;
                for (std::int64_t n = 0; n < N; ++n) {
                    const T* xp = x + (n * G + c) * ax.Xn;
                    const T* up = u + (n * G + c) * P;
                    for_valid_runs(ax, P, kf, [&](std::int64_t at, std::int64_t src, std::int64_t len, std::int64_t sl) {
                        for (std::int64_t t = 0; t < len; ++t) acc += up[at + t] * xp[src + t * sl];
                    });
                }
                dw[c * Kn + kf] += acc;
            }
        }
        return;
    }
    std::vector<T> dwt(static_cast<std::size_t>(Kn * G), T(0));
    const std::int64_t chunks = std::min<std::int64_t>(G, nt);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t ch = 0; ch < chunks; ++ch) {
        const std::int64_t c0 = part(G, ch, chunks), c1 = part(G, ch + 1, chunks);
        std::int64_t jm[kMaxD], k[kMaxD];
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t j = 0; j < P; ++j) {
                ax.unravel(j, ax.Y, jm);
                const T* ur = u + (n * P + j) * G;
                for (std::int64_t kf = 0; kf < Kn; ++kf) {
                    ax.unravel(kf, ax.K, k);
                    const std::int64_t off = ax.tap_offset(jm, k);
                    if (off < 0) continue;
                    const T* xr = x + n * ax.Xn * G + off;
                    T* dr = dwt.data() + kf * G;
                    for (std::int64_t c = c0; c < c1; ++c) dr[c] += ur[c] * xr[c];
                }
            }
    }
    for (std::int64_t c = 0; c < G; ++c)
        for (std::int64_t kf = 0; kf < Kn; ++kf) dw[c * Kn + kf] += dwt[kf * G + c];
}

#define TG_DEPTHWISE(T)                                                                  \
    template void depthwise_forward<T>(const ConvGeometry&, const T*, const T*, T*);     \
    template void depthwise_transposed<T>(const ConvGeometry&, const T*, const T*, T*);  \
    template void depthwise_weight_grad<T>(const ConvGeometry&, const T*, const T*, T*);
TG_DEPTHWISE(float)
TG_DEPTHWISE(double)
#undef TG_DEPTHWISE

}  // namespace tg
