#include "tapegrad/ops/conv_small.hpp"

#include <algorithm>
#include <atomic>
#include <limits>

#include <omp.h>

#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_plan.hpp"
#include "tapegrad/ops/conv_small_kernels.hpp"
#include "tapegrad/ops/vec.hpp"

namespace tg {

namespace simd_small {
namespace {

// Isa::scalar: the same sums, position by position.
template <class T>
void correlate_scalar(const Correlate<T>& a) {
    for (std::int64_t o = 0; o < a.nout; ++o)
        for (std::int64_t n = 0; n < a.images; ++n)
            for (std::int64_t t = n * a.image_len + a.lo; t < n * a.image_len + a.hi; ++t) {
                T s = 0;
                for (std::int64_t c = 0; c < a.nin; ++c)
                    for (std::int64_t k = 0; k < a.ntaps; ++k)
                        s += a.w[(c * a.ntaps + k) * a.nout + o] * a.in[c * a.ldi + a.off[k] + t];
                a.out[o * a.ldo + t] = s;
            }
}

template <class T>
void correlate_grad_scalar(const CorrelateGrad<T>& a) {
    for (std::int64_t o = 0; o < a.nout; ++o)
        for (std::int64_t c = 0; c < a.nin; ++c)
            for (std::int64_t k = 0; k < a.ntaps; ++k) {
                T s = 0;
                for (std::int64_t n = 0; n < a.images; ++n) {
                    const T* up = a.u + n * a.u_image + o * a.ldu;
                    const T* ip = a.in + n * a.in_image + c * a.ldi + a.off[k];
                    for (std::int64_t t = 0; t < a.len; ++t) s += up[t] * ip[t];
                }
                a.dw[(o * a.nin + c) * a.ntaps + k] += s;
            }
}

}  // namespace

const Kernels<float> f32_scalar = {&correlate_scalar<float>, &correlate_grad_scalar<float>, &split_rows_loop<float>, &merge_rows_loop<float>};
const Kernels<double> f64_scalar = {&correlate_scalar<double>, &correlate_grad_scalar<double>, &split_rows_loop<double>, &merge_rows_loop<double>};

}  // namespace simd_small

PhaseGrid::PhaseGrid(const ConvGeometry& g) : D(g.D()) {
    if (D > kMaxD) fail("geometry", "conv: ", D, " spatial axes, at most ", kMaxD, " are supported");
    std::vector<std::int64_t> phase[kMaxD], m[kMaxD];
    for (int a = 0; a < D; ++a) {
        s[a] = g.stride[a];
        std::int64_t mmin = std::numeric_limits<std::int64_t>::max(), mmax = std::numeric_limits<std::int64_t>::min();
        for (std::int64_t k = 0; k < g.kernel[a]; ++k) {
            const std::int64_t v = k * g.dilation[a] - g.pad_begin[a], q = floor_div(v, s[a]);
            phase[a].push_back(v - q * s[a]);
            m[a].push_back(q);
            mmin = std::min(mmin, q);
            mmax = std::max(mmax, q);
        }
        // Every q a tap reads (j + m_k for j < Y) and every q of the i-side (x = q·s + φ < X).
        qlo[a] = std::min<std::int64_t>(mmin, 0);
        const std::int64_t qhi = std::max(g.out_size[a] - 1 + mmax, ceil_div(g.in_size[a], s[a]) - 1);
        P[a] = qhi - qlo[a] + 1;
    }
    for (int a = D - 1; a >= 0; --a) {
        pitch[a] = a == D - 1 ? 1 : pitch[a + 1] * P[a + 1];
        phase_pitch[a] = a == D - 1 ? 1 : phase_pitch[a + 1] * s[a + 1];
        T += (g.out_size[a] - 1) * pitch[a];
    }
    PS = pitch[0] * P[0];
    phases = phase_pitch[0] * s[0];
    // Phase-plane rows q of x = q·s + φ in [0, X): 0 to ⌊(X − 1)/s⌋ over all phases.
    i_lo = 0;
    i_hi = 1;
    for (int a = 0; a < D; ++a) {
        i_lo += -qlo[a] * pitch[a];
        i_hi += (floor_div(g.in_size[a] - 1, s[a]) - qlo[a]) * pitch[a];
    }
    std::int64_t k[kMaxD] = {};
    for (std::int64_t kf = 0; kf < g.kernel_numel(); ++kf) {
        std::int64_t ph = 0, off = 0;
        for (int a = 0; a < D; ++a) {
            ph += phase[a][static_cast<std::size_t>(k[a])] * phase_pitch[a];
            off += (m[a][static_cast<std::size_t>(k[a])] - qlo[a]) * pitch[a];
        }
        tap_phase.push_back(ph);
        tap_off.push_back(off);
        front = std::max(front, off);
        for (int a = D - 1; a >= 0 && ++k[a] == g.kernel[a]; --a) k[a] = 0;
    }
    front = round_up(front, simd_small::kLanes);  // o-side grids start on a vector boundary
}

std::int64_t PhaseGrid::image_bytes(const ConvGeometry& g, std::int64_t eb) const { return (g.Ig * phases + g.Og) * PS * eb; }

namespace {

template <class T>
const simd_small::Kernels<T>& small_kernels() {
    static const simd::TypedDispatch<simd_small::Kernels> d{
        {simd_small::f32_scalar, simd_small::f32_avx2, simd_small::f32_avx512},
        {simd_small::f64_scalar, simd_small::f64_avx2, simd_small::f64_avx512}};
    return d.active<T>();
}

// Visits the rows of a grid of dims[0..D−1) (all axes but the last) in C order: f(row, idx).
template <class F>
void for_rows(int D, const std::int64_t* dims, F&& f) {
    std::int64_t idx[kMaxD] = {}, rows = 1;
    for (int a = 0; a < D - 1; ++a) rows *= dims[a];
    for (std::int64_t r = 0; r < rows; ++r) {
        f(r, idx);
        for (int a = D - 2; a >= 0 && ++idx[a] == dims[a]; --a) idx[a] = 0;
    }
}

// A chunk of images on the grid. i-side: per channel, per phase, the images' phase planes
// one after another ([c][φ][n][PS]); o-side: per channel, `front` zeros, then the images'
// grids one after another ([o][front + n·PS]). A tap then reads every image of the chunk
// at one offset, so a kernel call runs over all of them as one flat range of positions
// (an image's positions past T are dropped, or zero on the o-side, like a row's padding).
//
// A call's work is units of (chunk, group), unit u being group u mod G of chunk u / G.
struct Chunk {
    const PhaseGrid& pg;
    std::int64_t N, G, per;                   // the batch, its groups, images per chunk
    std::int64_t phase_ld, i_ld, o_ld, r_ld;  // strides: a phase's planes, an i-side channel,
                                              // an o-side channel, a result i-side channel
    Chunk(const PhaseGrid& grid, const ConvGeometry& g, std::int64_t images)
        : pg(grid), N(g.N), G(g.G), per(images), phase_ld(images * grid.PS), i_ld(grid.phases * images * grid.PS),
          o_ld(round_up(grid.front + images * grid.PS + simd_small::kMargin, simd_small::kLanes)),
          r_ld(round_up(i_ld + simd_small::kMargin, simd_small::kLanes)) {}
    std::int64_t len(std::int64_t nb) const { return nb * pg.PS; }
    std::int64_t units() const { return (N + per - 1) / per * G; }
    struct Unit {
        std::int64_t group, n0, nb, G;  // the group, the chunk's first image, its image count; groups
        // Offset of image n of the chunk, channel 0 of the group, in a tensor of C channels
        // per group and `plane` values per channel.
        std::int64_t at(std::int64_t n, std::int64_t C, std::int64_t plane) const { return ((n0 + n) * G + group) * C * plane; }
    };
    Unit unit(std::int64_t u) const {
        const std::int64_t n0 = u / G * per;
        return {u % G, n0, std::min(per, N - n0), G};
    }
    // A thread's i-side planes: `channels` of them, then zeros for the reads a tile makes up
    // to `front` + a tile past an image's plane (positions it drops, or zeros of u in the
    // weight gradient).
    std::int64_t i_buffer(std::int64_t channels) const { return channels * i_ld + pg.front + simd_small::kMargin; }
    // Tap k's offset in the i-side planes of a channel.
    std::vector<std::int64_t> tap_offsets() const {
        std::vector<std::int64_t> off;
        for (std::size_t k = 0; k < pg.tap_off.size(); ++k) off.push_back(pg.tap_phase[k] * phase_ld + pg.tap_off[k]);
        return off;
    }
};

// The copies between tensors and a chunk's grids, their row lists made once per call.
struct GridCopies {
    const ConvGeometry& g;
    const PhaseGrid& pg;
    const Chunk& ch;
    int L;
    std::int64_t Xn, P;
    // Pairs (tensor row, grid row), in the tensor's row order: i-side rows and their phase-0
    // rows in an image's phase planes; o-side rows and their rows in an image's grid.
    std::vector<std::int64_t> i_rows, o_rows;

    GridCopies(const ConvGeometry& geo, const PhaseGrid& grid, const Chunk& chunk)
        : g(geo), pg(grid), ch(chunk), L(geo.D() - 1), Xn(geo.in_numel()), P(geo.out_numel()) {
        // Row x (all axes but the last) is row x_a div s_a of phase plane x_a mod s_a (the
        // last axis's phase 0), from element −qlo.
        for_rows(geo.D(), g.in_size.data(), [&](std::int64_t row, const std::int64_t* x) {
            std::int64_t at = -pg.qlo[L];
            for (int a = 0; a < L; ++a) {
                const std::int64_t q = floor_div(x[a], pg.s[a]);
                at += (x[a] - q * pg.s[a]) * pg.phase_pitch[a] * ch.phase_ld + (q - pg.qlo[a]) * pg.pitch[a];
            }
            i_rows.insert(i_rows.end(), {row * g.in_size[L], at});
        });
        // Row j is row j of the grid (whose rows and columns past Y stay zero).
        for_rows(geo.D(), g.out_size.data(), [&](std::int64_t row, const std::int64_t* j) {
            std::int64_t at = 0;
            for (int a = 0; a < L; ++a) at += j[a] * pg.pitch[a];
            o_rows.insert(o_rows.end(), {row * g.out_size[L], at});
        });
    }

    static std::int64_t pairs(const std::vector<std::int64_t>& rows) { return static_cast<std::int64_t>(rows.size() / 2); }

    // Image n of the chunk from `channels` i-side planes at x (Xn apart).
    template <class T>
    void planes_from(const T* x, std::int64_t channels, T* planes, std::int64_t n) const {
        small_kernels<T>().split_rows({x, Xn, planes + n * pg.PS, ch.i_ld, i_rows.data(), pairs(i_rows), g.in_size[L], pg.s[L],
                                       ch.phase_ld, channels});
    }
    // `channels` i-side planes at r from image n of the chunk's result phase planes.
    template <class T>
    void planes_to(const T* planes, std::int64_t channels, T* r, std::int64_t n) const {
        small_kernels<T>().merge_rows({planes + n * pg.PS, ch.r_ld, r, Xn, i_rows.data(), pairs(i_rows), g.in_size[L], pg.s[L],
                                       ch.phase_ld, channels});
    }
    // Image n of the chunk from `channels` o-side planes at u (P apart).
    template <class T>
    void ogrid_from(const T* u, std::int64_t channels, T* grids, std::int64_t n) const {
        small_kernels<T>().split_rows({u, P, grids + pg.front + n * pg.PS, ch.o_ld, o_rows.data(), pairs(o_rows), g.out_size[L], 1, 0,
                                       channels});
    }
    // `channels` o-side planes at y from image n of the chunk.
    template <class T>
    void ogrid_to(const T* grids, std::int64_t channels, T* y, std::int64_t n) const {
        small_kernels<T>().merge_rows({grids + pg.front + n * pg.PS, ch.o_ld, y, P, o_rows.data(), pairs(o_rows), g.out_size[L], 1, 0,
                                       channels});
    }
};

// Zeroed once: the fronts and margins that the copies leave alone.
template <class T>
Buffer<T> zeroed(std::int64_t n) {
    Buffer<T> b(n);
    std::fill_n(b.data(), n, T(0));
    return b;
}

// Images per chunk: the grids of a chunk within a core's L2, at most `most`.
std::int64_t chunk_images(const ConvGeometry& g, const PhaseGrid& pg, std::size_t eb, std::int64_t most) {
    const std::int64_t image = std::max<std::int64_t>(1, pg.image_bytes(g, static_cast<std::int64_t>(eb)));
    return std::clamp<std::int64_t>(kTileCacheBytes / 4 / image, 1, std::max<std::int64_t>(1, most));
}

// Images per chunk of the weight gradient: also at most as many as keep the rows a register
// tile of correlate_grad reads again within a 32 KiB L1 (the smallest we run on): one input
// channel's phase planes, which every block of output channels reads, and a block's o-side
// rows (at most 4), which every tile of taps reads. Past that they come from L2 each time;
// short of it each tile's fixed costs weigh more. Measured at 1, 2, 4 and 8 images
// (Intel(R) Xeon(R) Processor, family 6 model 167, AVX-512, ms): depthwise_c128 (5 rows of
// 1 156: 1 image) 2.65 / 2.87-2.98 / 3.07-3.10 / 3.04-3.06; dcgan_g4 (8 rows of 1 156: 1)
// 1.33-1.36 / 1.47-1.48 / 1.47 / 1.72; the autoencoder's first layer (8 rows of 240: 4)
// 0.118-0.120 / 0.105 / 0.097 / 0.100; the classifier's second (5 rows of 256: 6 by L1, 5 by
// the L2 bound, as before) 2.17 / 1.73 / 1.43 / 1.33.
std::int64_t grad_chunk_images(const ConvGeometry& g, const PhaseGrid& pg, std::size_t eb, std::int64_t most) {
    constexpr std::int64_t kL1Bytes = 32 * 1024, kTileRows = 4;
    const std::int64_t per_image = std::max<std::int64_t>(1, (pg.phases + kTileRows) * pg.PS * static_cast<std::int64_t>(eb));
    return std::clamp<std::int64_t>(kL1Bytes / per_image, 1, chunk_images(g, pg, eb, most));
}

int units_team(int team, std::int64_t units) {
    return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(team, units)));
}

// Unit `un`'s planes of t (C channels of `plane` values each, per image) into L2, one line
// at a time, ahead of the copies that read them, where t is too large to stay in the cache
// between layers (kStreamBytes, a quarter of a Zen CCD's 32 MiB L3, which its 8 cores and
// other tenants share): the smaller tensors of a training step come from the cache, where
// the prefetches only cost time (3-8% on the classifier's and the autoencoder's layers). A
// unit's planes are a few pages per image, the batch's other groups between them, and the
// hardware's stream prefetchers stop at each page: the copies wait on memory.
// depthwise_c128, Zen 5, 1 thread, 10 alternated rounds, prefetching every operand: forward
// (x 16 MiB) 0.91, weight gradient 0.92 of the time without; its transposed call (u 4 MiB,
// not prefetched now) 0.96.
template <class T>
void prefetch_unit(const Chunk& ch, std::int64_t un, const T* t, std::int64_t C, std::int64_t plane) {
    constexpr std::int64_t kStreamBytes = std::int64_t{8} << 20, kLine = 64;
    const std::int64_t bytes = C * plane * static_cast<std::int64_t>(sizeof(T));  // an image's planes of a group
    if (un >= ch.units() || ch.N * ch.G * bytes < kStreamBytes) return;
    const Chunk::Unit c = ch.unit(un);
    for (std::int64_t n = 0; n < c.nb; ++n) {
        const char* b = reinterpret_cast<const char*>(t + c.at(n, C, plane));
        for (std::int64_t e = 0; e < bytes; e += kLine) __builtin_prefetch(b + e, 0, 2);
    }
}

}  // namespace

template <class T>
void small_forward(const ConvGeometry& g, const T* x, const T* w, T* y, int team) {
    const std::int64_t N = g.N, G = g.G, Ig = g.Ig, Og = g.Og, Kn = g.kernel_numel(), Xn = g.in_numel(), P = g.out_numel();
    const PhaseGrid pg(g);
    // Chunks: as many as the team has threads at least; the sums do not depend on them.
    const Chunk ch(pg, g, chunk_images(g, pg, sizeof(T), (N + team - 1) / std::max(1, team)));
    const GridCopies gc(g, pg, ch);
    const std::vector<std::int64_t> off = ch.tap_offsets();
    // W[g, o, i, k] as [g][(i·Kn + k)·Og + o].
    std::vector<T> wp(static_cast<std::size_t>(G * Og * Ig * Kn));
    for (std::int64_t gi = 0; gi < G; ++gi)
        for (std::int64_t o = 0; o < Og; ++o)
            for (std::int64_t ik = 0; ik < Ig * Kn; ++ik) wp[(gi * Ig * Kn + ik) * Og + o] = w[(gi * Og + o) * Ig * Kn + ik];
    const std::int64_t units = ch.units(), i_thread = ch.i_buffer(Ig);
    const int nt = units_team(team, units);
    Buffer<T> planes = zeroed<T>(nt * i_thread), grids(nt * Og * ch.o_ld);
    const simd_small::Kernels<T>& k = small_kernels<T>();
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t un = 0; un < units; ++un) {
        const int id = omp_get_thread_num();
        const Chunk::Unit c = ch.unit(un);
        T* pl = planes.data() + id * i_thread;
        T* gr = grids.data() + id * Og * ch.o_ld;
        prefetch_unit(ch, un + 1, x, Ig, Xn);
        for (std::int64_t n = 0; n < c.nb; ++n) gc.planes_from(x + c.at(n, Ig, Xn), Ig, pl, n);
        k.correlate({c.nb, pg.PS, 0, pg.T, Og, Ig, Kn, off.data(), wp.data() + c.group * Ig * Kn * Og, pl, ch.i_ld, gr + pg.front,
                     ch.o_ld});
        for (std::int64_t n = 0; n < c.nb; ++n) gc.ogrid_to(gr, Og, y + c.at(n, Og, P), n);
    }
}

template <class T>
bool small_transposed(const ConvGeometry& g, const T* u, const T* w, T* r, int team) {
    const std::int64_t N = g.N, G = g.G, Ig = g.Ig, Og = g.Og, Kn = g.kernel_numel(), Xn = g.in_numel(), P = g.out_numel();
    if (!vec::all_finite(w, G * Og * Ig * Kn)) return false;
    const PhaseGrid pg(g);
    const Chunk ch(pg, g, chunk_images(g, pg, sizeof(T), (N + team - 1) / std::max(1, team)));
    const GridCopies gc(g, pg, ch);
    // Per result phase: its taps' offsets back from the grid's front (front − off_k), and
    // the weight as [g][(o·taps + tap)·Ig + i].
    std::vector<std::vector<std::int64_t>> off(static_cast<std::size_t>(pg.phases));
    std::vector<std::vector<T>> wp(static_cast<std::size_t>(pg.phases));
    for (std::int64_t ph = 0; ph < pg.phases; ++ph) {
        std::vector<std::int64_t> taps;
        for (std::int64_t kf = 0; kf < Kn; ++kf)
            if (pg.tap_phase[kf] == ph) taps.push_back(kf);
        const std::int64_t nk = static_cast<std::int64_t>(taps.size());
        std::vector<T>& v = wp[ph];
        v.resize(static_cast<std::size_t>(G * Og * nk * Ig));
        for (std::int64_t gi = 0; gi < G; ++gi)
            for (std::int64_t o = 0; o < Og; ++o)
                for (std::int64_t t = 0; t < nk; ++t)
                    for (std::int64_t i = 0; i < Ig; ++i)
                        v[((gi * Og + o) * nk + t) * Ig + i] = w[((gi * Og + o) * Ig + i) * Kn + taps[t]];
        for (std::int64_t kf : taps) off[ph].push_back(pg.front - pg.tap_off[kf]);
    }
    const std::int64_t units = ch.units();
    const int nt = units_team(team, units);
    Buffer<T> grids = zeroed<T>(nt * Og * ch.o_ld), planes(nt * Ig * ch.r_ld);
    const simd_small::Kernels<T>& k = small_kernels<T>();
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t un = 0; un < units; ++un) {
        const int id = omp_get_thread_num();
        const Chunk::Unit c = ch.unit(un);
        T* gr = grids.data() + id * Og * ch.o_ld;
        T* pl = planes.data() + id * Ig * ch.r_ld;
        prefetch_unit(ch, un + 1, u, Og, P);
        for (std::int64_t n = 0; n < c.nb; ++n) gc.ogrid_from(u + c.at(n, Og, P), Og, gr, n);
        for (std::int64_t ph = 0; ph < pg.phases; ++ph) {  // in order: a tile past a phase's end is rewritten by the next
            const std::int64_t nk = static_cast<std::int64_t>(off[ph].size());
            k.correlate({c.nb, pg.PS, pg.i_lo, pg.i_hi, Ig, Og, nk, off[ph].data(), wp[ph].data() + c.group * Og * nk * Ig, gr, ch.o_ld,
                         pl + ph * ch.phase_ld, ch.r_ld});
        }
        for (std::int64_t n = 0; n < c.nb; ++n) gc.planes_to(pl, Ig, r + c.at(n, Ig, Xn), n);
    }
    return true;
}

template <class T>
bool small_weight_grad(const ConvGeometry& g, const T* x, const T* u, T* dw, int team) {
    const std::int64_t N = g.N, Ig = g.Ig, Og = g.Og, Kn = g.kernel_numel(), Xn = g.in_numel(), P = g.out_numel();
    const PhaseGrid pg(g);
    // Chunks fixed by the geometry alone (at least two where the batch allows), their sums
    // added in chunk order: any team gives the same bits.
    const Chunk ch(pg, g, grad_chunk_images(g, pg, sizeof(T), (N + 1) / 2));
    const GridCopies gc(g, pg, ch);
    const std::vector<std::int64_t> off = ch.tap_offsets();
    const std::int64_t wsize = Og * Ig * Kn, units = ch.units(), i_thread = ch.i_buffer(Ig);
    const int nt = units_team(team, units);
    Buffer<T> planes = zeroed<T>(nt * i_thread), grids = zeroed<T>(nt * Og * ch.o_ld), partial(units * wsize);
    std::fill_n(partial.data(), units * wsize, T(0));
    const simd_small::Kernels<T>& k = small_kernels<T>();
    // x checked image by image just before its copy reads it again from L1 (the header).
    std::atomic<bool> finite{true};
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t un = 0; un < units; ++un) {
        if (!finite.load(std::memory_order_relaxed)) continue;
        const int id = omp_get_thread_num();
        const Chunk::Unit c = ch.unit(un);
        T* pl = planes.data() + id * i_thread;
        T* gr = grids.data() + id * Og * ch.o_ld;
        prefetch_unit(ch, un + 1, x, Ig, Xn);
        prefetch_unit(ch, un + 1, u, Og, P);
        bool ok = true;
        for (std::int64_t n = 0; n < c.nb; ++n) {
            const T* xn = x + c.at(n, Ig, Xn);
            ok = ok && vec::all_finite(xn, Ig * Xn);
            gc.planes_from(xn, Ig, pl, n);
            gc.ogrid_from(u + c.at(n, Og, P), Og, gr, n);
        }
        if (!ok) {
            finite.store(false, std::memory_order_relaxed);
            continue;
        }
        // The kernel sums whole vectors: zeros after the chunk's last image (the margin
        // holds them for a full chunk).
        if (c.nb < ch.per)
            for (std::int64_t o = 0; o < Og; ++o) std::fill_n(gr + o * ch.o_ld + pg.front + ch.len(c.nb), simd_small::kLanes, T(0));
        k.correlate_grad({1, ch.len(c.nb), Og, Ig, Kn, off.data(), gr + pg.front, ch.o_ld, 0, pl, ch.i_ld, 0,
                          partial.data() + un * wsize});
    }
    if (!finite.load()) return false;
    for (std::int64_t un = 0; un < units; ++un) {  // chunk by chunk, in order
        const T* pp = partial.data() + un * wsize;
        T* d = dw + ch.unit(un).group * wsize;
        for (std::int64_t e = 0; e < wsize; ++e) d[e] += pp[e];
    }
    return true;
}

#define TG_SMALL(T)                                                                          \
    template void small_forward<T>(const ConvGeometry&, const T*, const T*, T*, int);        \
    template bool small_transposed<T>(const ConvGeometry&, const T*, const T*, T*, int);     \
    template bool small_weight_grad<T>(const ConvGeometry&, const T*, const T*, T*, int);
TG_SMALL(float)
TG_SMALL(double)
#undef TG_SMALL

}  // namespace tg
