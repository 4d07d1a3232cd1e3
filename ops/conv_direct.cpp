#include "tapegrad/ops/conv_direct.hpp"

#include <vector>

#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_axes.hpp"
#include "tapegrad/ops/vec_kernels.hpp"
#include "tapegrad/ops/vec.hpp"

#include <omp.h>

namespace tg {

namespace {

// Channels-last weights as [∏K][G] so the channel loop reads them contiguously.
template <class T>
std::vector<T> taps_major(const ConvGeometry& g, const T* w) {
    const std::int64_t Kn = g.kernel_numel();
    std::vector<T> wt(static_cast<std::size_t>(Kn * g.G));
    for (std::int64_t c = 0; c < g.G; ++c)
        for (std::int64_t k = 0; k < Kn; ++k) wt[k * g.G + c] = w[c * Kn + k];
    return wt;
}

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
    const vec::Kernels<T>& vk = vec::active_kernels<T>();
    if (g.layout == Layout::NCX) {
        const PhasePlane pp(ax);
        Buffer<T> pms(pp.identity ? 0 : nt * ax.Xn);
#pragma omp parallel for num_threads(nt) schedule(static)
        for (std::int64_t plane = 0; plane < N * G; ++plane) {
            const T* xp = x + plane * ax.Xn;
            T* pm = pp.identity ? nullptr : pms.data() + omp_get_thread_num() * ax.Xn;
            if (pm) pp.to_phase_major(xp, pm);
            const T* xs = pm ? pm : xp;
            T* yp = y + plane * P;
            const T* wc = w + (plane % G) * Kn;
            pp.for_tap_runs([&](std::int64_t kf, std::int64_t at, std::int64_t ip, std::int64_t len) {
                vk.axpy(len, wc[kf], xs + ip, yp + at);
            });
        }
        return;
    }
    const std::vector<T> wt = taps_major(g, w);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t row = 0; row < N * P; ++row) {
        const std::int64_t n = row / P;
        T* yr = y + row * G;
        ax.for_taps(row % P, [&](std::int64_t kf, std::int64_t off) {
            if (off >= 0) vk.fma(G, wt.data() + kf * G, x + n * ax.Xn * G + off, yr);
        });
    }
}

template <class T>
void depthwise_transposed(const ConvGeometry& g, const T* u, const T* w, T* r) {
    const Axes ax(g);
    const std::int64_t P = g.out_numel(), G = g.G, N = g.N, Kn = ax.Kn;
    const int nt = threads_for(g);
    const vec::Kernels<T>& vk = vec::active_kernels<T>();
    if (g.layout == Layout::NCX) {
        // A plane's taps all land in its own plane: planes never collide. Each plane is
        // summed phase-major in a buffer, then written out whole (r need not be zeroed).
        const PhasePlane pp(ax);
        Buffer<T> pms(nt * ax.Xn);
#pragma omp parallel for num_threads(nt) schedule(static)
        for (std::int64_t plane = 0; plane < N * G; ++plane) {
            T* rp = r + plane * ax.Xn;
            T* pm = pp.identity ? rp : pms.data() + omp_get_thread_num() * ax.Xn;
            std::fill_n(pm, ax.Xn, T(0));
            const T* up = u + plane * P;
            const T* wc = w + (plane % G) * Kn;
            pp.for_tap_runs([&](std::int64_t kf, std::int64_t at, std::int64_t ip, std::int64_t len) {
                vk.axpy(len, wc[kf], up + at, pm + ip);
            });
            if (!pp.identity) pp.from_phase_major(pm, rp);
        }
        return;
    }
    // Channels last: positions of one image collide, so split images and channel ranges.
    const std::vector<T> wt = taps_major(g, w);
    const std::int64_t chunks = N >= nt ? 1 : std::min<std::int64_t>(G, (nt + N - 1) / N);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t unit = 0; unit < N * chunks; ++unit) {
        const std::int64_t n = unit / chunks, ch = unit % chunks;
        const std::int64_t c0 = team_part(G, ch, chunks), c1 = team_part(G, ch + 1, chunks);
        for (std::int64_t j = 0; j < P; ++j) {
            const T* ur = u + (n * P + j) * G;
            ax.for_taps(j, [&](std::int64_t kf, std::int64_t off) {
                if (off >= 0) vk.fma(c1 - c0, wt.data() + kf * G + c0, ur + c0, r + n * ax.Xn * G + off + c0);
            });
        }
    }
}

template <class T>
void depthwise_weight_grad(const ConvGeometry& g, const T* x, const T* u, T* dw) {
    const Axes ax(g);
    const std::int64_t P = g.out_numel(), G = g.G, N = g.N, Kn = ax.Kn;
    const int nt = threads_for(g);
    const vec::Kernels<T>& vk = vec::active_kernels<T>();
    if (g.layout == Layout::NCX) {
        // One group per task, summing over images and runs in a fixed order.
        const PhasePlane pp(ax);
        Buffer<T> pms(pp.identity ? 0 : nt * ax.Xn);
#pragma omp parallel for num_threads(nt) schedule(static)
        for (std::int64_t c = 0; c < G; ++c) {
            T* pm = pp.identity ? nullptr : pms.data() + omp_get_thread_num() * ax.Xn;
            for (std::int64_t n = 0; n < N; ++n) {
                const T* xp = x + (n * G + c) * ax.Xn;
                if (pm) pp.to_phase_major(xp, pm);
                const T* xs = pm ? pm : xp;
                const T* up = u + (n * G + c) * P;
                T* dwc = dw + c * Kn;
                pp.for_tap_runs([&](std::int64_t kf, std::int64_t at, std::int64_t ip, std::int64_t len) {
                    dwc[kf] += vk.dot(len, up + at, xs + ip);
                });
            }
        }
        return;
    }
    std::vector<T> dwt(static_cast<std::size_t>(Kn * G), T(0));
    const std::int64_t chunks = std::min<std::int64_t>(G, nt);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t ch = 0; ch < chunks; ++ch) {
        const std::int64_t c0 = team_part(G, ch, chunks), c1 = team_part(G, ch + 1, chunks);
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t j = 0; j < P; ++j) {
                const T* ur = u + (n * P + j) * G;
                ax.for_taps(j, [&](std::int64_t kf, std::int64_t off) {
                    if (off >= 0) vk.fma(c1 - c0, ur + c0, x + n * ax.Xn * G + off + c0, dwt.data() + kf * G + c0);
                });
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
