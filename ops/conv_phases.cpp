#include "tapegrad/ops/conv_phases.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_axes.hpp"
#include "tapegrad/ops/conv_plan.hpp"

#include <omp.h>

namespace tg {

namespace {

// One output phase: its offsets φ, the phase grid Q (positions q with q·s + φ < X), and the
// taps that reach it, each as a flat kernel index and a per-axis shift m (u index = q − m).
struct Phase {
    std::int64_t phi[kMaxD], Q[kMaxD], Qn = 1;
    std::vector<std::int64_t> kflat;
    std::vector<std::int64_t> m;  // kflat.size() × D
    std::int64_t taps() const { return static_cast<std::int64_t>(kflat.size()); }
};

std::vector<Phase> make_phases(const ConvGeometry& g) {
    const int D = g.D();
    // Per axis and phase: the reaching taps and their shifts.
    std::vector<std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>> axis_taps(D);
    std::int64_t count = 1;
    for (int a = 0; a < D; ++a) {
        const std::int64_t s = g.stride[a];
        axis_taps[a].resize(static_cast<std::size_t>(s));
        for (std::int64_t k = 0; k < g.kernel[a]; ++k) {
            const std::int64_t v = k * g.dilation[a] - g.pad_begin[a];
            const std::int64_t phi = floor_mod(v, s);
            axis_taps[a][static_cast<std::size_t>(phi)].push_back({k, (v - phi) / s});
        }
        count *= s;
    }
    std::vector<Phase> phases;
    std::int64_t idx[kMaxD];
    for (std::int64_t p = 0; p < count; ++p) {
        std::int64_t rest = p;
        for (int a = D - 1; a >= 0; --a) { idx[a] = rest % g.stride[a]; rest /= g.stride[a]; }
        Phase ph;
        std::int64_t ntaps = 1;
        for (int a = 0; a < D; ++a) {
            ph.phi[a] = idx[a];
            ph.Q[a] = g.in_size[a] > idx[a] ? (g.in_size[a] - idx[a] + g.stride[a] - 1) / g.stride[a] : 0;
            ph.Qn *= ph.Q[a];
            ntaps *= static_cast<std::int64_t>(axis_taps[a][static_cast<std::size_t>(idx[a])].size());
        }
        if (ph.Qn == 0) continue;
        for (std::int64_t t = 0; t < ntaps; ++t) {  // cartesian product of the axes' taps
            std::int64_t rest_t = t, kf = 0, kstride = 1, mt[kMaxD];
            for (int a = D - 1; a >= 0; --a) {
                const auto& list = axis_taps[a][static_cast<std::size_t>(idx[a])];
                const std::int64_t len = static_cast<std::int64_t>(list.size());
                const auto& [k, m] = list[static_cast<std::size_t>(rest_t % len)];
                rest_t /= len;
                mt[a] = m;
                kf += k * kstride;
                kstride *= g.kernel[a];
            }
            ph.kflat.push_back(kf);
            ph.m.insert(ph.m.end(), mt, mt + D);
        }
        phases.push_back(std::move(ph));
    }
    return phases;
}

template <class T>
struct Problem {
    const ConvGeometry& g;
    const T* u;
    T* r;
    int D;
    std::int64_t Yn, Xn, Y[kMaxD], ystride[kMaxD], xstride[kMaxD];

    Problem(const ConvGeometry& geo, const T* u_, T* r_) : g(geo), u(u_), r(r_), D(geo.D()) {
        std::int64_t ya = 1, xa = 1;
        for (int a = D - 1; a >= 0; --a) {
            Y[a] = g.out_size[a];
            ystride[a] = ya;
            xstride[a] = xa;
            ya *= g.out_size[a];
            xa *= g.in_size[a];
        }
        Yn = ya;
        Xn = xa;
    }

    // A run: columns [c, c + len) of a phase matrix that are consecutive phase positions on
    // the last axis of one image, starting at phase position q.
    struct Run {
        std::int64_t c, len, ni, q[kMaxD];
    };

    // Splits columns [c0, c0+n) into runs (column c = image c / Qn, position c mod Qn).
    void runs(const Phase& ph, std::int64_t c0, std::int64_t n, std::vector<Run>& out) const {
        out.clear();
        const std::int64_t L = D - 1;
        Run r{};
        std::int64_t rest = c0 % ph.Qn;
        r.ni = c0 / ph.Qn;
        for (std::int64_t a = L; a >= 0; --a) { r.q[a] = rest % ph.Q[a]; rest /= ph.Q[a]; }
        for (std::int64_t c = 0; c < n;) {
            r.c = c;
            r.len = std::min(ph.Q[L] - r.q[L], n - c);
            out.push_back(r);
            c += r.len;
            r.q[L] += r.len;
            for (std::int64_t a = L; a > 0 && r.q[a] >= ph.Q[a]; --a) { r.q[a] = 0; ++r.q[a - 1]; }
            if (r.q[0] >= ph.Q[0]) { r.q[0] = 0; ++r.ni; }
        }
    }

    // Rows [k0, k0+kc) × columns [c0, c0+n) of phase ph's patch matrix of group grp,
    // dst[(row − k0)·width + (c − c0)], zero-padded to `width` columns. Row o·T + t holds
    // u[o, q − m_t].
    void patches(const Phase& ph, std::int64_t grp, std::int64_t k0, std::int64_t kc, std::int64_t c0, std::int64_t n,
                 std::int64_t width, T* dst) const {
        thread_local std::vector<Run> rs;
        runs(ph, c0, n, rs);
        const std::int64_t Tn = ph.taps(), L = D - 1;
        const std::int64_t o_stride_n = g.G * g.Og * Yn;
        std::int64_t o = k0 / Tn, t = k0 % Tn;
        for (std::int64_t row = k0; row < k0 + kc; ++row, t = t + 1 == Tn ? (++o, 0) : t + 1) {
            const std::int64_t* m = ph.m.data() + t * D;
            const T* ug = u + (grp * g.Og + o) * Yn - m[L];
            T* d = dst + (row - k0) * width;
            for (const Run& r : rs) {
                T* dd = d + r.c;
                bool ok = true;
                std::int64_t off = 0;
                for (std::int64_t a = 0; a < L; ++a) {
                    const std::int64_t pos = r.q[a] - m[a];
                    if (pos < 0 || pos >= Y[a]) { ok = false; break; }
                    off += pos * ystride[a];
                }
                // u index of element e of the run: q_L + e − m_L, valid in [0, Y_L)
                const std::int64_t p0 = r.q[L] - m[L];
                const std::int64_t lo = ok ? std::clamp<std::int64_t>(-p0, 0, r.len) : r.len;
                const std::int64_t hi = ok ? std::clamp<std::int64_t>(Y[L] - p0, lo, r.len) : r.len;
                const T* src = ug + r.ni * o_stride_n + off + r.q[L];
                if (lo == 0 && hi == r.len) {  // the common case: the whole run reads u
                    std::memcpy(dd, src, static_cast<std::size_t>(r.len) * sizeof(T));
                    continue;
                }
                for (std::int64_t e = 0; e < lo; ++e) dd[e] = T(0);
                for (std::int64_t e = lo; e < hi; ++e) dd[e] = src[e];
                for (std::int64_t e = hi; e < r.len; ++e) dd[e] = T(0);
            }
            for (std::int64_t e = n; e < width; ++e) d[e] = T(0);
        }
    }

    // r[n, grp·Ig + i, q·s + φ] = vals[i·ld + (c − c0)] for columns [c0, c0+n) of the phase
    // (vals == nullptr writes zeros).
    void scatter(const Phase& ph, std::int64_t grp, std::int64_t c0, std::int64_t n, const T* vals, std::int64_t ld) const {
        thread_local std::vector<Run> rs;
        runs(ph, c0, n, rs);
        const std::int64_t L = D - 1, sL = g.stride[L];
        for (Run& r : rs) {  // q[0] now holds the run's first output offset in an image plane
            std::int64_t off = 0;
            for (std::int64_t a = 0; a <= L; ++a) off += (r.q[a] * g.stride[a] + ph.phi[a]) * xstride[a];
            r.q[0] = (r.ni * g.G + grp) * g.Ig * Xn + off;
        }
        for (std::int64_t i = 0; i < g.Ig; ++i) {
            const T* v = vals ? vals + i * ld : nullptr;
            for (const Run& r : rs) {
                T* out = this->r + r.q[0] + i * Xn;
                if (!v) for (std::int64_t e = 0; e < r.len; ++e) out[e * sL] = T(0);
                else if (sL == 1) for (std::int64_t e = 0; e < r.len; ++e) out[e] = v[r.c + e];
                else for (std::int64_t e = 0; e < r.len; ++e) out[e * sL] = v[r.c + e];
            }
        }
    }
};

}  // namespace

template <class T>
void conv_transposed_phases(const ConvGeometry& g, const T* u, const T* w, T* r) {
    const std::vector<Phase> phases = make_phases(g);
    const Problem<T> pr(g, u, r);
    const std::int64_t G = g.G, Og = g.Og, Ig = g.Ig, Kn = g.kernel_numel();
    // Each phase's weight matrix Wφ[g][i][o·T + t] = W[g][o][i][k_t]; together one weight.
    std::vector<std::int64_t> wofs(phases.size() + 1, 0);
    for (std::size_t p = 0; p < phases.size(); ++p) wofs[p + 1] = wofs[p] + G * Ig * Og * phases[p].taps();
    Buffer<T> wp(wofs.back());
    for (std::size_t p = 0; p < phases.size(); ++p) {
        const Phase& ph = phases[p];
        const std::int64_t Tn = ph.taps(), Rp = Og * Tn;
        for (std::int64_t grp = 0; grp < G; ++grp)
            for (std::int64_t i = 0; i < Ig; ++i)
                for (std::int64_t o = 0; o < Og; ++o)
                    for (std::int64_t t = 0; t < Tn; ++t)
                        wp[wofs[p] + (grp * Ig + i) * Rp + o * Tn + t] = w[((grp * Og + o) * Ig + i) * Kn + ph.kflat[t]];
    }
    const double flops = 2.0 * static_cast<double>(g.N) * G * Ig * Og * Kn * g.out_numel();
    const int nt = team_size(flops, team_min_flops());
    // Each thread computes a chunk of a phase's columns into its own [Ig × chunk] buffer and
    // writes it out; threads own disjoint columns, so nothing is shared but the inputs.
    const std::int64_t budget_cols = workspace_budget() / (static_cast<std::int64_t>(sizeof(T)) * Ig * nt);
    std::int64_t chunk = std::max<std::int64_t>(64, budget_cols / 64 * 64), per_thread = 0;
    for (const Phase& ph : phases) per_thread = std::max(per_thread, (g.N * ph.Qn + nt - 1) / nt);
    chunk = std::min(chunk, per_thread);
    Buffer<T> outs(nt * Ig * chunk);
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num(), T_ = omp_get_num_threads();
        T* const out = outs.data() + t * Ig * chunk;
        for (std::size_t p = 0; p < phases.size(); ++p) {
            const Phase& ph = phases[p];
            const std::int64_t cols = g.N * ph.Qn, Rp = Og * ph.taps();
            const std::int64_t c0 = cols * t / T_, c1 = cols * (t + 1) / T_;
            for (std::int64_t grp = 0; grp < G; ++grp)
                for (std::int64_t ca = c0; ca < c1; ca += chunk) {
                    const std::int64_t cn = std::min(chunk, c1 - ca);
                    if (Rp == 0) {
                        pr.scatter(ph, grp, ca, cn, nullptr, 0);
                        continue;
                    }
                    auto src = [&](std::int64_t k0, std::int64_t kc, std::int64_t j0, std::int64_t n, std::int64_t width,
                                   T* dst) {
                        for (std::int64_t j = 0; j < n; j += width, dst += width * kc)
                            pr.patches(ph, grp, k0, kc, ca + j0 + j, std::min(width, n - j), width, dst);
                    };
                    gemm_from<T>(false, Ig, cn, Rp, T(1), wp.data() + wofs[p] + grp * Ig * Rp, Rp, panel_source<T>(src),
                                 T(0), out, cn);
                    pr.scatter(ph, grp, ca, cn, out, cn);
                }
        }
    }
}

template void conv_transposed_phases<float>(const ConvGeometry&, const float*, const float*, float*);
template void conv_transposed_phases<double>(const ConvGeometry&, const double*, const double*, double*);

}  // namespace tg
