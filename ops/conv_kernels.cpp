#include "tapegrad/ops/conv_kernels.hpp"
#include "tapegrad/core/env.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/convert.hpp"
#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_direct.hpp"
#include "tapegrad/ops/conv_phases.hpp"
#include "tapegrad/ops/im2col.hpp"

#include <omp.h>

namespace tg {

namespace {

std::atomic<std::int64_t> g_workspace{std::int64_t{64} << 20};
// Read on first use, never during static initialisation: an invalid value is an error
// thrown where a transposed convolution runs (so a program can catch it and report it), not
// a termination before main.
TransposedAlgo initial_transposed_algo() {
    const std::optional<std::string> e = env::choice("TAPEGRAD_TRANSPOSED", {"auto", "col2im", "phases"});
    return !e || *e == "auto" ? TransposedAlgo::Auto : *e == "col2im" ? TransposedAlgo::Col2im : TransposedAlgo::Phases;
}
std::atomic<TransposedAlgo>& transposed_setting() {
    static std::atomic<TransposedAlgo> s{initial_transposed_algo()};
    return s;
}

// The stride-phase form drops the column buffer and the scatter-add, but rebuilds u's
// patches for every phase (one element per Ig multiply-adds) and writes a phase with stride
// s. col2im touches only the band of each tile and was faster on every layer measured
// (bench/RESULTS.md, "Design choices and the measurements behind them"), so Auto is col2im;
// the phase form stays selectable (set_transposed_algo, TAPEGRAD_TRANSPOSED=phases) and tested.
bool use_phases(const ConvGeometry& g) {
    if (g.layout != Layout::NCX) return false;
    return transposed_setting().load(std::memory_order_relaxed) == TransposedAlgo::Phases;
}

// The batch is cut into tiles of columns (positions of whole images, or chunks of one
// image's positions) whose buffers stay in a core's L2 cache: the columns (R per column)
// and the staged o-side or result (Og per column). Tiles do not grow with N, so neither
// does the time per image (measured: with 8 MiB tiles, at N = 64 dcgan_g2's forward spent
// 18% more per image than at N = 16, dcgan_g4 20%; L2-sized tiles also made dcgan_g4's
// transposed convolution 30% faster at any N). A tile has at least kMinTileCols columns
// all the same: the GEMM packs the weight again for every tile, and with fewer columns
// that packing shows (dcgan_g1, R = 4096: 1.5x slower at 56 columns).
// `bytes_per_col` is one thread's; with `nbuf` threads holding buffers of their own, the
// workspace budget, never exceeded, is shared between them. `multiple`: make the count of
// tiles a multiple of it where the batch allows (so that a team can take whole tiles).
// Tiles depend on the team only through these two, and only where that does not change a
// result's bits (see run_kernel).
constexpr std::int64_t kTileCacheBytes = std::int64_t{1} << 20;
constexpr std::int64_t kMinTileCols = 512, kMinPackedTileCols = 128;

std::int64_t tile_cols(std::int64_t bytes_per_col, int nbuf, std::int64_t min_cols) {
    const std::int64_t per_col = std::max<std::int64_t>(1, bytes_per_col);
    const std::int64_t cache_cols = std::max(min_cols, kTileCacheBytes / per_col);
    return std::max<std::int64_t>(1, std::min(cache_cols, conv_workspace_bytes() / (per_col * nbuf)));
}

std::vector<ColTile> make_tiles(std::int64_t N, std::int64_t P, std::int64_t cols, std::int64_t multiple) {
    std::vector<ColTile> tiles;
    if (P <= cols) {  // whole images, as few tiles as the size allows, all of about one size
        std::int64_t count = (N + cols / P - 1) / (cols / P);
        count = std::min(N, (count + multiple - 1) / multiple * multiple);
        for (std::int64_t t = 0; t < count; ++t) {
            const std::int64_t n0 = N * t / count, n1 = N * (t + 1) / count;
            tiles.push_back({n0, n1 - n0, 0, P});
        }
    } else {  // chunks of one image's positions, of about one size
        std::int64_t count = (P + cols - 1) / cols;
        while ((N * count) % multiple != 0 && count < P) ++count;
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t t = 0; t < count; ++t) tiles.push_back({n, 1, P * t / count, P * (t + 1) / count});
    }
    return tiles;
}

// NXC kernels read the weight with R in (k, i) order: Wk[g][o][k·Ig + i] = W[g][o][i][k].
template <class T>
Buffer<T> pack_k_major(const ConvGeometry& g, const T* w) {
    const std::int64_t Kn = g.kernel_numel(), Ig = g.Ig, R = g.R();
    Buffer<T> out(g.G * g.Og * R);
    for (std::int64_t go = 0; go < g.G * g.Og; ++go)
        for (std::int64_t i = 0; i < Ig; ++i)
            for (std::int64_t k = 0; k < Kn; ++k) out[go * R + k * Ig + i] = w[go * R + i * Kn + k];
    return out;
}

// w += the k-major wk (the weight gradient accumulates, as over chunks of images).
template <class T>
void unpack_k_major(const ConvGeometry& g, const T* wk, T* w) {
    const std::int64_t Kn = g.kernel_numel(), Ig = g.Ig, R = g.R();
    for (std::int64_t go = 0; go < g.G * g.Og; ++go)
        for (std::int64_t i = 0; i < Ig; ++i)
            for (std::int64_t k = 0; k < Kn; ++k) w[go * R + i * Kn + k] += wk[go * R + k * Ig + i];
}

// The o-side slice of group `grp` over a tile, as a matrix the GEMM can read:
// NCX [Og × cols] (staged when the tile spans several images), NXC [cols × Og] in place.
template <class T>
struct OSide {
    const ConvGeometry& g;
    std::int64_t P;
    std::int64_t stride_n() const { return g.G * g.Og * P; }
    // NCX pointer/ld for a single-image tile
    T* ncx(T* base, const ColTile& t, std::int64_t grp) const { return base + t.n0 * stride_n() + grp * g.Og * P + t.p0; }
    T* nxc(T* base, const ColTile& t, std::int64_t grp) const { return base + (t.n0 * P + t.p0) * g.G * g.Og + grp * g.Og; }
    void gather(const T* base, const ColTile& t, std::int64_t grp, T* stage, std::int64_t o0, std::int64_t o1) const {
        for (std::int64_t o = o0; o < o1; ++o)
            for (std::int64_t ni = 0; ni < t.nb; ++ni)
                std::memcpy(stage + o * t.cols() + ni * P, base + (t.n0 + ni) * stride_n() + (grp * g.Og + o) * P,
                            static_cast<std::size_t>(P) * sizeof(T));
    }
    void scatter(const T* stage, const ColTile& t, std::int64_t grp, T* base, std::int64_t o0, std::int64_t o1) const {
        for (std::int64_t o = o0; o < o1; ++o)
            for (std::int64_t ni = 0; ni < t.nb; ++ni)
                std::memcpy(base + (t.n0 + ni) * stride_n() + (grp * g.Og + o) * P, stage + o * t.cols() + ni * P,
                            static_cast<std::size_t>(P) * sizeof(T));
    }
};

enum class Kind { Forward, Transposed, WeightGrad };


// Zeros the columns past n of the last of the width-wide panels a PanelSource writes.
template <class T>
void zero_panel_tail(T* dst, std::int64_t n, std::int64_t width, std::int64_t kc) {
    const std::int64_t used = n % width;
    if (used == 0) return;
    T* last = dst + (n / width) * width * kc;
    for (std::int64_t k = 0; k < kc; ++k) std::fill(last + k * width + used, last + (k + 1) * width, T(0));
}

// [lo, hi) of part t of T equal parts of n.
inline std::int64_t part(std::int64_t n, int t, int T) { return n * t / T; }

// The buffers and operands of one kernel call, shared by the threads of a team.
template <class T>
struct Step {
    Kind kind;
    const ConvGeometry& g;
    const OSide<T>& os;
    T *x, *o, *wm;  // i-side, o-side, weight matrix in col's row order (see run_kernel)
    const std::vector<PackedA<T>>* packed;  // NCX forward/transposed: each group's weight, packed once
};

// One group of one tile, run by thread `t` of a team of `nt` threads. Threads split the
// GEMM's columns (positions) for im2col and the GEMM, then, after a barrier, the output:
// images and channels for col2im, weight columns for the weight gradient. No two threads
// write the same element, so results do not depend on timing; OpenBLAS runs single-threaded
// inside, so there is one thread pool.
template <class T>
void group_step(const Step<T>& s, const ColTile& tile, std::int64_t grp, T* col, T* stage, int t, int nt) {
    const ConvGeometry& g = s.g;
    const std::int64_t P = s.os.P, R = g.R(), Og = g.Og, C = tile.cols(), Ig = g.Ig;
    const bool nxc = g.layout == Layout::NXC;
    const std::int64_t c0 = part(C, t, nt), c1 = part(C, t + 1, nt);
    const T* wg = s.wm + grp * Og * R;
    auto barrier = [nt] {
        if (nt > 1) {
#pragma omp barrier
        }
    };
    const bool staged = !nxc && tile.nb > 1;
    T* om;  // the o-side matrix of this group: NCX [Og × C] (ld ldo), NXC [C × Og] (ld G·Og)
    std::int64_t ldo;
    if (nxc) { om = s.os.nxc(s.o, tile, grp); ldo = g.G * Og; }
    else if (staged) { om = stage; ldo = C; }
    else { om = s.os.ncx(s.o, tile, grp); ldo = P; }

    if (staged && s.kind != Kind::Forward) {
        s.os.gather(s.o, tile, grp, stage, part(Og, t, nt), part(Og, t + 1, nt));
        barrier();
    }
    // NCX runs im2col inside the GEMM's packing (no column buffer); NXC builds the columns.
    if (s.kind != Kind::Transposed && nxc) im2col_nxc(g, s.x, tile, grp, c0, c1, col);
    switch (s.kind) {
        case Kind::Forward:
            if (!nxc) {  // y_g[Og × c] = Wm_g[Og × R] · col[R × c], col made panel by panel
                Im2colLists lists;
                auto cols = [&](std::int64_t k0, std::int64_t kc, std::int64_t j0, std::int64_t n, std::int64_t width,
                                T* dst) {
                    im2col_ncx(g, s.x, tile, grp, k0, k0 + kc, c0 + j0, c0 + j0 + n, dst, PanelLayout{width},
                               PanelLayout{1, width, width * kc}, lists);
                    zero_panel_tail(dst, n, width, kc);
                };
                gemm_from<T>((*s.packed)[static_cast<std::size_t>(grp)], c1 - c0, T(1), panel_source<T>(cols), T(0), om + c0,
                             ldo);
                if (staged) {
                    barrier();
                    s.os.scatter(stage, tile, grp, s.o, part(Og, t, nt), part(Og, t + 1, nt));
                }
            } else {  // y_g[c × Og] = col[c × R] · Wk_gᵀ[R × Og]
                gemm<T>(false, true, c1 - c0, Og, R, T(1), col + c0 * R, R, wg, R, T(0), om + c0 * ldo, ldo);
            }
            break;
        case Kind::Transposed: {
            if (!nxc)  // col[R × c] = Wm_gᵀ[R × Og] · u_g[Og × c]
                gemm<T>((*s.packed)[static_cast<std::size_t>(grp)], false, c1 - c0, T(1), om + c0, ldo, T(0), col + c0, C);
            else  // col[c × R] = u_g[c × Og] · Wk_g[Og × R]
                gemm<T>(false, false, c1 - c0, R, Og, T(1), om + c0 * ldo, ldo, wg, R, T(0), col + c0 * R, R);
            barrier();
            // col2im work units: (image, channel chunk) pairs, channels split only as far as
            // the team needs (a call lists its runs once for all its channels).
            const std::int64_t chunks = std::min<std::int64_t>(Ig, (nt + tile.nb - 1) / tile.nb);
            const std::int64_t units = tile.nb * chunks, u0 = part(units, t, nt), u1 = part(units, t + 1, nt);
            for (std::int64_t u = u0; u < u1; ++u) {
                const std::int64_t ni = u / chunks, ch = u % chunks;
                const std::int64_t i0 = part(Ig, static_cast<int>(ch), static_cast<int>(chunks)),
                                   i1 = part(Ig, static_cast<int>(ch) + 1, static_cast<int>(chunks));
                col2im(g, nxc ? col : col + i0 * g.kernel_numel() * C, tile, grp, ni, ni + 1, i0, i1, s.x);
            }
            break;
        }
        case Kind::WeightGrad: {
            const std::int64_t r0 = part(R, t, nt), r1 = part(R, t + 1, nt);
            T* dw = const_cast<T*>(wg);
            if (!nxc) {  // dW_g[Og × r] += u_g[Og × C] · colᵀ[C × r], colᵀ made panel by panel
                Im2colLists lists;
                auto cols_t = [&](std::int64_t k0, std::int64_t kc, std::int64_t j0, std::int64_t n, std::int64_t width,
                                  T* dst) {
                    im2col_ncx(g, s.x, tile, grp, r0 + j0, r0 + j0 + n, k0, k0 + kc, dst, PanelLayout{1, width, width * kc},
                               PanelLayout{width}, lists);
                    zero_panel_tail(dst, n, width, kc);
                };
                gemm_from<T>(false, Og, r1 - r0, C, T(1), om, ldo, panel_source<T>(cols_t), T(1), dw + r0, R);
            } else {  // dWk_g[Og × r] += u_gᵀ[Og × C] · col[C × r]
                barrier();
                gemm<T>(true, false, Og, r1 - r0, C, T(1), om, ldo, col + r0, R, T(1), dw + r0, R);
            }
            break;
        }
    }
}

// The NCX transposed kernel on channels [i0, i1) of group `grp` over a tile: the GEMM makes
// only those channels' rows of col (`a` is Wm_gᵀ's rows for them, packed by the caller;
// u staged in `stage` when the tile spans several images), and col2im adds them into those
// channels. Threads that take disjoint channel ranges share nothing, not even a barrier.
template <class T>
void transposed_channels(const Step<T>& s, const PackedA<T>& a, const ColTile& tile, std::int64_t grp, std::int64_t i0,
                         std::int64_t i1, T* col, T* stage) {
    const std::int64_t C = tile.cols();
    if (tile.nb > 1) {  // u_g of several images, staged as one [Og × C] matrix
        s.os.gather(s.o, tile, grp, stage, 0, s.g.Og);
        gemm<T>(a, false, C, T(1), stage, C, T(0), col, C);
    } else {
        gemm<T>(a, false, C, T(1), s.os.ncx(s.o, tile, grp), s.os.P, T(0), col, C);
    }
    col2im(s.g, col, tile, grp, 0, tile.nb, i0, i1, s.x);
}

// One driver for the three kernels: they share the tiling, the im2col/col2im side and the
// o-side addressing, and differ only in the GEMM and its direction.
//   Forward:    x = i-side input, o = o-side output, w = weight input
//   Transposed: o = o-side input, x = i-side output (accumulated), w = weight input
//   WeightGrad: x, o inputs, w = weight output (accumulated)
template <class T>
void run_kernel(Kind kind, const ConvGeometry& g, T* x, T* o, T* w) {
    if (g.Ig == 1 && g.Og == 1) {  // depthwise: no GEMM worth the name (conv_direct.hpp)
        switch (kind) {
            case Kind::Forward: depthwise_forward<T>(g, x, w, o); break;
            case Kind::Transposed: depthwise_transposed<T>(g, o, w, x); break;
            case Kind::WeightGrad: depthwise_weight_grad<T>(g, x, o, w); break;
        }
        return;
    }
    if (kind == Kind::Transposed && use_phases(g)) {
        conv_transposed_phases<T>(g, o, w, x);
        return;
    }
    const std::int64_t P = g.out_numel(), R = g.R(), Og = g.Og, G = g.G;
    const bool nxc = g.layout == Layout::NXC;
    // One team for the whole call, if the call is worth one (a team costs a fork, barriers
    // and a join, and on a busy machine a descheduled thread stalls its team): below ~1 ms
    // of single-core work everything runs on the calling thread.
    const int nt = team_size(2.0 * g.macs(), kTeamMinFlops);
    const bool uses_col = nxc || kind == Kind::Transposed;  // NCX im2col feeds the GEMM directly
    const std::int64_t bytes_per_col = static_cast<std::int64_t>(sizeof(T)) * ((uses_col ? R : 0) + (nxc ? 0 : Og));
    // How a team shares the work:
    //  - by units: each thread takes whole (tile, group) units with buffers of its own, no
    //    barriers. Possible where units write disjoint outputs: the forward kernel's tiles,
    //    the transposed kernel's tiles of whole images (chunks of one image overlap in it).
    //    Their results do not depend on the tiling, so the tile count can be a multiple of
    //    the team.
    //  - by groups (grouped and depthwise layers): tiles one after another, each thread
    //    takes whole groups with buffers of its own.
    //  - by partial sums (the weight gradient over several tiles): each thread takes whole
    //    (tile, group) units, each accumulating into a partial gradient of its own; the
    //    partials are added into the result in tile order at the end. The reduction over the
    //    batch is split with no two threads writing the same element, and the sum does not
    //    depend on the team (1 and 2 threads agree bit for bit). Used whatever the team, while
    //    the partials are small (at most a quarter of the workspace budget).
    //  - by images (the transposed kernel on chunks of one image, with at least as many
    //    images as threads): each thread takes the chunks of whole images, in order, with
    //    buffers of its own and no barriers; the images' outputs are disjoint, and each
    //    image's chunks add up in the order of one thread.
    //  - by channels (the NCX transposed kernel on chunks of fewer images than threads, as a
    //    super-resolution layer at N = 1, or with a weight too big for a core's L2): each
    //    thread takes a range of the i-side channels, packs their rows of the weight, makes
    //    their rows of col and adds them into them, tile after tile, with no barriers.
    //  - together: the whole team works on one group of one tile at a time (group_step).
    // The weight is packed once per call where it is the GEMM's A (NCX forward and transposed),
    // so tiles there need only a few micro-tiles' columns.
    const std::int64_t min_cols = !nxc && kind != Kind::WeightGrad ? kMinPackedTileCols : kMinTileCols;
    const bool independent =
        kind == Kind::Forward || (kind == Kind::Transposed && P <= tile_cols(bytes_per_col, nt, min_cols));
    const bool by_group = nt > 1 && G >= nt;
    const bool by_images = nt > 1 && kind == Kind::Transposed && !independent && g.N >= nt;
    // A weight that does not fit beside a tile in a core's L2 is streamed again for every
    // tile; split by channels, each thread streams only its rows of it (bench/RESULTS.md).
    const bool big_weight = R * Og * static_cast<std::int64_t>(sizeof(T)) > kTileCacheBytes / 2;
    const bool by_channels = nt > 1 && kind == Kind::Transposed && (!independent || big_weight) && !by_images && !nxc &&
                             !by_group && g.Ig >= nt;
    const bool own_buffers = nt > 1 && (independent || by_group || by_images || kind == Kind::WeightGrad);
    const int nbuf = own_buffers ? nt : 1;
    const std::int64_t cols = tile_cols(bytes_per_col, nbuf, min_cols);
    const std::vector<ColTile> tiles = make_tiles(g.N, P, cols, independent ? nt : 1);
    const std::int64_t ntiles = static_cast<std::int64_t>(tiles.size()), wsize = G * Og * R;
    const bool by_partials = kind == Kind::WeightGrad && ntiles >= 2 &&
                             ntiles * wsize * static_cast<std::int64_t>(sizeof(T)) <= conv_workspace_bytes() / 4;
    const bool by_units = nt > 1 && independent && ntiles * G >= nt && !by_channels;
    std::int64_t max_cols = 0, max_nb = 0;
    for (const ColTile& t : tiles) {
        max_cols = std::max(max_cols, t.cols());
        max_nb = std::max(max_nb, t.nb);
    }
    Buffer<T> col(uses_col ? nbuf * R * max_cols : 0);
    Buffer<T> stage(nxc || max_nb == 1 ? 0 : nbuf * Og * max_cols);  // NCX tiles of several images
    Buffer<T> wk;
    T* wm = w;  // the weight matrix in the row order of col
    if (nxc) {
        if (kind == Kind::WeightGrad) {  // accumulated over tiles, like w itself
            wk = Buffer<T>(G * Og * R);
            std::fill_n(wk.data(), wk.size(), T(0));
        } else {
            wk = pack_k_major(g, w);
        }
        wm = wk.data();
    }
    // NCX forward and transposed: the weight is the GEMM's A in every tile; packed once here.
    std::vector<PackedA<T>> packed;
    if (!nxc && kind != Kind::WeightGrad && !by_channels)  // (by channels: each thread packs its own rows)
        for (std::int64_t grp = 0; grp < G; ++grp)
            packed.emplace_back(kind == Kind::Transposed, kind == Kind::Transposed ? R : Og, kind == Kind::Transposed ? Og : R,
                                w + grp * Og * R, R);
    const OSide<T> os{g, P};
    const Step<T> s{kind, g, os, x, o, wm, &packed};
    // Thread id's own column and staging buffers, where threads have their own (nbuf = nt).
    auto col_of = [&](int id) { return col.empty() ? nullptr : col.data() + id * R * max_cols; };
    auto stage_of = [&](int id) { return stage.empty() ? nullptr : stage.data() + id * Og * max_cols; };
    if (by_partials) {
        Buffer<T> partial(ntiles * wsize);
        auto unit = [&](std::int64_t u, T* my_col, T* my_stage) {  // (tile u / G, group u mod G)
            const Step<T> su{kind, g, os, x, o, partial.data() + (u / G) * wsize, &packed};
            group_step(su, tiles[static_cast<std::size_t>(u / G)], u % G, my_col, my_stage, 0, 1);
        };
        auto reduce = [&](std::int64_t e0, std::int64_t e1) {  // wm += the partials, in tile order
            for (std::int64_t t = 0; t < ntiles; ++t)
                for (std::int64_t e = e0; e < e1; ++e) wm[e] += partial[t * wsize + e];
        };
        if (nt == 1) {
            std::fill_n(partial.data(), partial.size(), T(0));
            for (std::int64_t u = 0; u < ntiles * G; ++u) unit(u, col_of(0), stage_of(0));
            reduce(0, wsize);
        } else {
#pragma omp parallel num_threads(nt)
            {
                const int id = omp_get_thread_num(), team = omp_get_num_threads();
                std::fill(partial.data() + part(partial.size(), id, team), partial.data() + part(partial.size(), id + 1, team), T(0));
#pragma omp barrier
#pragma omp for schedule(static)
                for (std::int64_t u = 0; u < ntiles * G; ++u) unit(u, col_of(id), stage_of(id));
                reduce(part(wsize, id, team), part(wsize, id + 1, team));
            }
        }
    } else if (nt == 1) {
        for (const ColTile& tile : tiles)
            for (std::int64_t grp = 0; grp < G; ++grp) group_step(s, tile, grp, col.data(), stage.data(), 0, 1);
    } else if (by_images) {  // tiles are chunks of one image each (nb = 1)
#pragma omp parallel num_threads(nt)
        {
            const int id = omp_get_thread_num(), team = omp_get_num_threads();
            const std::int64_t n0 = part(g.N, id, team), n1 = part(g.N, id + 1, team);
            for (const ColTile& tile : tiles)
                if (tile.n0 >= n0 && tile.n0 < n1)
                    for (std::int64_t grp = 0; grp < G; ++grp) group_step(s, tile, grp, col_of(id), stage_of(id), 0, 1);
        }
    } else if (by_channels) {  // col is [R × max_cols], split by rows
#pragma omp parallel num_threads(nt)
        {
            const int id = omp_get_thread_num(), team = omp_get_num_threads();
            const std::int64_t i0 = part(g.Ig, id, team), i1 = part(g.Ig, id + 1, team), Kn = g.kernel_numel();
            Buffer<T> my_stage(max_nb > 1 ? Og * max_cols : 0);
            std::vector<PackedA<T>> mine;  // each group's Wm_gᵀ rows of these channels
            for (std::int64_t grp = 0; grp < G; ++grp)
                mine.emplace_back(true, (i1 - i0) * Kn, Og, w + grp * Og * R + i0 * Kn, R);
            for (const ColTile& tile : tiles)
                for (std::int64_t grp = 0; grp < G; ++grp)
                    transposed_channels(s, mine[static_cast<std::size_t>(grp)], tile, grp, i0, i1,
                                        col.data() + i0 * Kn * max_cols, my_stage.data());
        }
    } else if (by_units || by_group) {
        const std::int64_t nunits = static_cast<std::int64_t>(tiles.size()) * G;
#pragma omp parallel num_threads(nt)
        {
            const int id = omp_get_thread_num();
            T* my_col = col_of(id);
            T* my_stage = stage_of(id);
            if (by_units) {
#pragma omp for schedule(static)
                for (std::int64_t u = 0; u < nunits; ++u)
                    group_step(s, tiles[static_cast<std::size_t>(u / G)], u % G, my_col, my_stage, 0, 1);
            } else {
                for (const ColTile& tile : tiles) {
#pragma omp for schedule(static)
                    for (std::int64_t grp = 0; grp < G; ++grp) group_step(s, tile, grp, my_col, my_stage, 0, 1);
                }
            }
        }
    } else {
        // Barrier after each step: the next one overwrites the shared buffers and may add
        // into the same outputs.
#pragma omp parallel num_threads(nt)
        {
            const int id = omp_get_thread_num(), team = omp_get_num_threads();
            for (const ColTile& tile : tiles)
                for (std::int64_t grp = 0; grp < G; ++grp) {
                    group_step(s, tile, grp, col.data(), stage.data(), id, team);
#pragma omp barrier
                }
        }
    }
    if (nxc && kind == Kind::WeightGrad) unpack_k_major(g, wk.data(), w);
}

void check_operand(const Tensor& t, const Shape& want, const char* what, const char* fn) {
    if (!t.defined()) fail(what, fn, ": ", what, " is undefined");
    if (t.shape() != want)
        fail(what, fn, ": ", what, " has shape ", shape_str(t.shape()), ", the geometry needs ", shape_str(want));
    if (!is_float(t.dtype())) fail(what, fn, ": ", what, " has dtype ", dtype_name(t.dtype()), ", a float dtype is needed");
}

DType common_dtype(const Tensor& a, const Tensor& b, const char* fn) {
    if (a.dtype() != b.dtype())
        fail("dtype", fn, ": operand dtypes differ (", dtype_name(a.dtype()), " and ", dtype_name(b.dtype()), ")");
    return a.dtype();
}

// The kernels write every output element of the forward GEMM, the phase form and the NCX
// depthwise transposed kernel; the others accumulate into zeros.
bool writes_all(Kind kind, const ConvGeometry& g) {
    if (g.Ig == 1 && g.Og == 1) return kind == Kind::Transposed && g.layout == Layout::NCX;
    return kind == Kind::Forward || (kind == Kind::Transposed && use_phases(g));
}

// out[n, c, p] += bias[c] on `images` whole results of C channels and P positions each.
template <class T>
void add_bias(T* out, const T* bias, std::int64_t images, std::int64_t C, std::int64_t P, Layout layout) {
    for (std::int64_t n = 0; n < images; ++n) {
        T* o = out + n * C * P;
        if (layout == Layout::NCX) {
            for (std::int64_t c = 0; c < C; ++c)
                for (std::int64_t p = 0; p < P; ++p) o[c * P + p] += bias[c];
        } else {
            for (std::int64_t p = 0; p < P; ++p)
                for (std::int64_t c = 0; c < C; ++c) o[p * C + c] += bias[c];
        }
    }
}

// The bias in the compute type (f32 for every float dtype but f64), or undefined.
Tensor bias_in(const Tensor& bias, DType dt) {
    return bias.defined() ? bias.to(dt == DType::f64 ? DType::f64 : DType::f32).contiguous() : Tensor();
}

template <class T>
void run_roles(Kind kind, const ConvGeometry& g, T* a, T* b, T* out) {
    switch (kind) {
        case Kind::Forward: run_kernel<T>(kind, g, a, out, b); break;
        case Kind::Transposed: run_kernel<T>(kind, g, out, a, b); break;
        case Kind::WeightGrad: run_kernel<T>(kind, g, a, b, out); break;
    }
}

void to_f32(DType dt, const std::uint16_t* src, float* dst, std::int64_t n) {
    if (dt == DType::f16) f16_to_f32_n(src, dst, n);
    else bf16_to_f32_n(src, dst, n);
}
void from_f32(DType dt, const float* src, std::uint16_t* dst, std::int64_t n) {
    if (dt == DType::f16) f32_to_f16_n(src, dst, n);
    else f32_to_bf16_n(src, dst, n);
}

// Where an image-indexed operand keeps the rows of spatial axis 0: per image, `blocks` runs
// of `len` = size[0]·row elements (NCX: one run per channel; NXC: one run, all channels).
struct AxisRows {
    std::int64_t blocks = 0, len = 0, row = 0;
    AxisRows(Layout layout, std::int64_t C, const Shape& size) {
        row = 1;
        for (std::size_t a = 1; a < size.size(); ++a) row *= size[a];
        if (layout == Layout::NCX) blocks = C;
        else { blocks = 1; row *= C; }
        len = size[0] * row;
    }
    std::int64_t image() const { return blocks * len; }
    // Calls f(offset in the whole tensor, offset in a packed band, count) for each run of
    // rows [r0, r1) of images [n0, n0 + nb); the band holds them image by image, block by block.
    template <class F>
    void for_runs(std::int64_t n0, std::int64_t nb, std::int64_t r0, std::int64_t r1, F&& f) const {
        const std::int64_t n = (r1 - r0) * row;
        for (std::int64_t i = 0; i < nb; ++i)
            for (std::int64_t b = 0; b < blocks; ++b) f((n0 + i) * image() + b * len + r0 * row, (i * blocks + b) * n, n);
    }
};

// Rows [i0, i1) of the i-side and [o0, o1) of the o-side on spatial axis 0; i0 == i1 when
// the o-side rows' windows hold only padding.
struct Band {
    std::int64_t i0, i1, o0, o1;
};

// The i-side rows that the windows of o-side rows [o0, o1) read (forward, weight gradient).
Band band_of_o_rows(const ConvGeometry& g, std::int64_t o0, std::int64_t o1) {
    const std::int64_t s = g.stride[0], pb = g.pad_begin[0], X = g.in_size[0], eff = g.extent(0);
    const std::int64_t i0 = std::clamp<std::int64_t>(o0 * s - pb, 0, X), i1 = std::clamp<std::int64_t>((o1 - 1) * s - pb + eff, i0, X);
    return {i0, i1, o0, o1};
}

// The o-side rows whose taps can land in i-side rows [i0, i1) (transposed). The first is
// taken no later than the one whose first tap is at or before i0, so the band's pad_begin
// stays >= 0; rows that reach nothing in the band cost a little work and change nothing.
Band band_of_i_rows(const ConvGeometry& g, std::int64_t i0, std::int64_t i1) {
    const std::int64_t s = g.stride[0], pb = g.pad_begin[0], Y = g.out_size[0], eff = g.extent(0);
    const std::int64_t o0 = std::clamp<std::int64_t>(std::min(ceil_div(i0 + pb - eff + 1, s), floor_div(i0 + pb, s)), 0, Y - 1);
    const std::int64_t o1 = std::clamp<std::int64_t>(floor_div(i1 - 1 + pb, s) + 1, o0 + 1, Y);
    return {i0, i1, o0, o1};
}

// The geometry of `nb` images restricted to a band: the kernels see only pad_begin and the
// sizes, so shifting pad_begin by the band's offsets is all it takes.
ConvGeometry band_geometry(const ConvGeometry& g, std::int64_t nb, const Band& b) {
    ConvGeometry gb = g;
    const std::int64_t s = g.stride[0], eff = g.extent(0);
    gb.N = nb;
    gb.in_size[0] = b.i1 - b.i0;
    gb.out_size[0] = b.o1 - b.o0;
    gb.pad_begin[0] = g.pad_begin[0] + b.i0 - b.o0 * s;
    gb.pad_end[0] = (gb.out_size[0] - 1) * s + eff - gb.in_size[0] - gb.pad_begin[0];
    return gb;
}

// f16/bf16: the kernels run in f32 on pieces converted in and out through workspace
// buffers of about the column budget, so no image-indexed tensor is ever copied whole to
// f32. A piece is a chunk of whole images, or, when one image alone exceeds the budget, a
// band of rows of spatial axis 0 of one image (a 1-D signal with a 1 GiB result is cut into
// bands). The weight (or the weight gradient, accumulated over the pieces in f32) is small
// and converted once. Every output element is still rounded once.
Tensor dispatch_16bit(Kind kind, const Tensor& a, const Tensor& b, const Tensor& bias, const ConvGeometry& g, DType dt,
                      const Shape& out_shape) {
    const Tensor A = a.contiguous(), B = b.contiguous(), bc = bias_in(bias, dt);
    Tensor out = Tensor::empty(out_shape, dt);
    const AxisRows i_rows(g.layout, g.G * g.Ig, g.in_size), o_rows(g.layout, g.G * g.Og, g.out_size);
    // The image-indexed operands' rows (nullptr for the weight): a is x or u, b is u or the
    // weight, the result is u, x or the weight gradient.
    const AxisRows* ra = kind == Kind::Transposed ? &o_rows : &i_rows;
    const AxisRows* rb = kind == Kind::WeightGrad ? &o_rows : nullptr;
    const AxisRows* ro = kind == Kind::Forward ? &o_rows : kind == Kind::Transposed ? &i_rows : nullptr;
    auto rows_of = [&](const AxisRows* r, const Band& band) {  // the band's rows of r's side
        return r == &i_rows ? std::pair{band.i0, band.i1} : std::pair{band.o0, band.o1};
    };
    auto elems = [&](const AxisRows* r, std::int64_t nb, const Band& band) {
        const auto [r0, r1] = rows_of(r, band);
        return r ? nb * r->blocks * (r1 - r0) * r->row : 0;
    };

    struct Piece {
        std::int64_t n0, nb;
        Band band;
    };
    std::vector<Piece> pieces;
    const std::int64_t budget = std::max<std::int64_t>(1, conv_workspace_bytes() / 4);  // f32 elements
    const std::int64_t per_image = std::max<std::int64_t>(1, (ra ? ra->image() : 0) + (rb ? rb->image() : 0) + (ro ? ro->image() : 0));
    if (per_image <= budget || g.N == 0) {
        const std::int64_t nb = std::clamp<std::int64_t>(budget / per_image, 1, std::max<std::int64_t>(g.N, 1));
        for (std::int64_t n0 = 0; n0 < g.N; n0 += nb)
            pieces.push_back({n0, std::min(nb, g.N - n0), {0, g.in_size[0], 0, g.out_size[0]}});
    } else {  // bands of the result's rows (the o-side rows for the weight gradient)
        const bool by_i = kind == Kind::Transposed;
        const std::int64_t S = by_i ? g.in_size[0] : g.out_size[0];
        const std::int64_t rows = std::max<std::int64_t>(1, budget / ((per_image + S - 1) / S));
        for (std::int64_t n = 0; n < g.N; ++n)
            for (std::int64_t r0 = 0; r0 < S; r0 += rows) {
                const std::int64_t r1 = std::min(S, r0 + rows);
                pieces.push_back({n, 1, by_i ? band_of_i_rows(g, r0, r1) : band_of_o_rows(g, r0, r1)});
            }
    }
    std::int64_t na = 0, nbb = 0, no = 0;
    for (const Piece& p : pieces) {
        na = std::max(na, elems(ra, p.nb, p.band));
        nbb = std::max(nbb, elems(rb, p.nb, p.band));
        no = std::max(no, elems(ro, p.nb, p.band));
    }
    Buffer<float> ba(na), bb(rb ? nbb : B.numel()), bo(ro ? no : out.numel());
    if (!rb) to_f32(dt, B.data<std::uint16_t>(), bb.data(), B.numel());  // the weight, once
    if (!ro) std::fill_n(bo.data(), bo.size(), 0.f);                      // dW, accumulated
    auto load = [&](const AxisRows* r, const Tensor& t, float* dst, const Piece& p) {
        const auto [r0, r1] = rows_of(r, p.band);
        const std::uint16_t* src = t.data<std::uint16_t>();
        r->for_runs(p.n0, p.nb, r0, r1, [&](std::int64_t whole, std::int64_t band, std::int64_t n) { to_f32(dt, src + whole, dst + band, n); });
    };
    for (const Piece& p : pieces) {
        const bool padding_only = p.band.i0 == p.band.i1;  // forward rows that read no input: 0 + bias
        if (padding_only && !ro) continue;                   // no weight-gradient term
        const ConvGeometry gc = band_geometry(g, p.nb, p.band);
        const std::int64_t n_out = ro ? elems(ro, p.nb, p.band) : 0;
        if (ro && (padding_only || !writes_all(kind, gc))) std::fill_n(bo.data(), n_out, 0.f);
        if (!padding_only) {
            load(ra, A, ba.data(), p);
            if (rb) load(rb, B, bb.data(), p);
            run_roles<float>(kind, gc, ba.data(), bb.data(), bo.data());
        }
        if (!ro) continue;
        if (bc.defined()) add_bias(bo.data(), bc.data<float>(), p.nb, bc.numel(), n_out / (p.nb * bc.numel()), g.layout);
        const auto [r0, r1] = rows_of(ro, p.band);
        std::uint16_t* dst = out.data<std::uint16_t>();
        ro->for_runs(p.n0, p.nb, r0, r1,
                     [&](std::int64_t whole, std::int64_t band, std::int64_t n) { from_f32(dt, bo.data() + band, dst + whole, n); });
    }
    if (!ro) from_f32(dt, bo.data(), out.data<std::uint16_t>(), out.numel());
    return out;
}

// Runs `kind` with inputs a, b (roles per Kind) and returns the output, in the inputs' dtype;
// a defined `bias` is added to every result channel before the one rounding.
Tensor dispatch(Kind kind, const Tensor& a, const Tensor& b, const Tensor& bias, const ConvGeometry& g, const char* fn) {
    g.validate(fn);
    const DType dt = common_dtype(a, b, fn);
    const Shape out_shape = kind == Kind::Forward ? g.out_shape() : kind == Kind::Transposed ? g.in_shape() : g.weight_shape();
    if (bias.defined()) {
        const std::int64_t C = kind == Kind::Forward ? g.G * g.Og : g.G * g.Ig;
        if (bias.shape() != Shape{C})
            fail("bias", fn, ": bias has shape ", shape_str(bias.shape()), ", the result ", shape_str(out_shape), " has ", C,
                 " channels");
        if (!is_float(bias.dtype())) fail("bias", fn, ": bias has dtype ", dtype_name(bias.dtype()), ", a float dtype is needed");
    }
    if (is_16bit(dt)) return dispatch_16bit(kind, a, b, bias, g, dt, out_shape);
    const Tensor A = a.contiguous(), B = b.contiguous(), bc = bias_in(bias, dt);
    Tensor out = writes_all(kind, g) ? Tensor::empty(out_shape, dt) : Tensor::zeros(out_shape, dt);
    if (g.N > 0)
        with_compute_type(dt, [&](auto tag) {
            using T = decltype(tag);
            run_roles<T>(kind, g, const_cast<T*>(A.data<T>()), const_cast<T*>(B.data<T>()), out.data<T>());
            if (bc.defined())
                add_bias(out.data<T>(), bc.data<T>(), g.N, bc.numel(), out.numel() / std::max<std::int64_t>(1, g.N * bc.numel()),
                         g.layout);
        });
    return out;
}

}  // namespace

void set_conv_workspace_bytes(std::int64_t bytes) {
    if (bytes < 1) fail("workspace", "workspace budget ", bytes, " must be >= 1 byte");
    g_workspace = bytes;
}
std::int64_t conv_workspace_bytes() { return g_workspace; }

void set_transposed_algo(TransposedAlgo algo) { transposed_setting() = algo; }
TransposedAlgo transposed_algo() { return transposed_setting(); }

Tensor conv_forward(const Tensor& x, const Tensor& W, const ConvGeometry& g, const Tensor& bias) {
    check_operand(x, g.in_shape(), "data", "conv_forward");
    check_operand(W, g.weight_shape(), "filter", "conv_forward");
    return dispatch(Kind::Forward, x, W, bias, g, "conv_forward");
}

Tensor conv_transposed(const Tensor& u, const Tensor& W, const ConvGeometry& g, const Tensor& bias) {
    check_operand(u, g.out_shape(), "data", "conv_transposed");
    check_operand(W, g.weight_shape(), "filter", "conv_transposed");
    return dispatch(Kind::Transposed, u, W, bias, g, "conv_transposed");
}

Tensor conv_weight_grad(const Tensor& x, const Tensor& u, const ConvGeometry& g) {
    check_operand(x, g.in_shape(), "data", "conv_weight_grad");
    check_operand(u, g.out_shape(), "grad_output", "conv_weight_grad");
    return dispatch(Kind::WeightGrad, x, u, Tensor(), g, "conv_weight_grad");
}

}  // namespace tg
