// The executors of the conv plans (tapegrad/ops/conv_plan.hpp) and the three public entry points.
#include "tapegrad/ops/conv_kernels.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "bias.hpp"
#include "conv_exec.hpp"
#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_direct.hpp"
#include "tapegrad/ops/conv_phases.hpp"
#include "tapegrad/ops/conv_rows.hpp"
#include "tapegrad/ops/conv_small.hpp"
#include "tapegrad/ops/im2col.hpp"
#include "tapegrad/ops/math.hpp"
#include "tapegrad/ops/vec_kernels.hpp"

#include <omp.h>

namespace tg {

namespace {

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

// Zeros the columns past n of the last of the width-wide panels a PanelSource writes.
template <class T>
void zero_panel_tail(T* dst, std::int64_t n, std::int64_t width, std::int64_t kc) {
    const std::int64_t used = n % width;
    if (used == 0) return;
    T* last = dst + (n / width) * width * kc;
    for (std::int64_t k = 0; k < kc; ++k) std::fill(last + k * width + used, last + (k + 1) * width, T(0));
}

// The buffers and operands of one kernel call, shared by the threads of a team.
template <class T>
struct Step {
    ConvKind kind;
    const ConvGeometry& g;
    const OSide<T>& os;
    T *x, *o, *wm;  // i-side, o-side, weight matrix in col's row order (see run_conv)
    const std::vector<PackedA<T>>* packed;  // NCX forward/transposed: each group's weight, packed once
    T w_beta;       // the weight gradient: 1 adds into wm, 0 writes it (a tile's own partial sum)
};

// The NCX transposed GEMM col = Wm_gᵀ · u_g and its col2im, for the channels i0, .. whose
// rows `a` holds (u_g [Og × cols], ld ldu): the GEMM makes a block of channels' rows at a
// time (gemm_block_rows: the plan sized col for one) and col2im adds each block in while it
// is in cache.
template <class T>
void transposed_col2im(const Step<T>& s, const PackedA<T>& a, const ColTile& tile, std::int64_t grp, std::int64_t i0,
                       const T* u, std::int64_t ldu, T* col) {
    const std::int64_t Kn = s.g.kernel_numel(), C = tile.cols();
    gemm_row_blocks<T>(a, Kn, C, u, ldu, col, C, [&](std::int64_t r0, std::int64_t r1) {
        col2im(s.g, col, tile, grp, 0, tile.nb, i0 + r0 / Kn, i0 + r1 / Kn, s.x);
    });
}

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
    const std::int64_t c0 = team_part(C, t, nt), c1 = team_part(C, t + 1, nt);
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

    if (staged && s.kind != ConvKind::Forward) {
        s.os.gather(s.o, tile, grp, stage, team_part(Og, t, nt), team_part(Og, t + 1, nt));
        barrier();
    }
    // NCX runs im2col inside the GEMM's packing (no column buffer); NXC builds the columns.
    if (s.kind != ConvKind::Transposed && nxc) im2col_nxc(g, s.x, tile, grp, c0, c1, col);
    switch (s.kind) {
        case ConvKind::Forward:
            if (!nxc) {  // y_g[Og × c] = Wm_g[Og × R] · col[R × c], col made panel by panel
                auto cols = [&](std::int64_t k0, std::int64_t kc, std::int64_t j0, std::int64_t n, std::int64_t width,
                                T* dst) {
                    im2col_ncx(g, s.x, tile, grp, k0, k0 + kc, c0 + j0, c0 + j0 + n, dst, PanelLayout{width},
                               PanelLayout{1, width, width * kc});
                    zero_panel_tail(dst, n, width, kc);
                };
                gemm_from<T>((*s.packed)[static_cast<std::size_t>(grp)], c1 - c0, T(1), panel_source<T>(cols), T(0), om + c0,
                             ldo);
                if (staged) {
                    barrier();
                    s.os.scatter(stage, tile, grp, s.o, team_part(Og, t, nt), team_part(Og, t + 1, nt));
                }
            } else {  // y_g[c × Og] = col[c × R] · Wk_gᵀ[R × Og]
                gemm<T>(false, true, c1 - c0, Og, R, T(1), col + c0 * R, R, wg, R, T(0), om + c0 * ldo, ldo);
            }
            break;
        case ConvKind::Transposed: {
            if (!nxc && nt == 1) {
                transposed_col2im(s, (*s.packed)[static_cast<std::size_t>(grp)], tile, grp, 0, om, ldo, col);
                break;
            }
            if (!nxc)  // col[R × c] = Wm_gᵀ[R × Og] · u_g[Og × c]
                gemm<T>((*s.packed)[static_cast<std::size_t>(grp)], false, c1 - c0, T(1), om + c0, ldo, T(0), col + c0, C);
            else  // col[c × R] = u_g[c × Og] · Wk_g[Og × R]
                gemm<T>(false, false, c1 - c0, R, Og, T(1), om + c0 * ldo, ldo, wg, R, T(0), col + c0 * R, R);
            barrier();
            // col2im work units: (image, channel chunk) pairs, channels split only as far as
            // the team needs (a call lists its runs once for all its channels).
            const std::int64_t chunks = std::min<std::int64_t>(Ig, (nt + tile.nb - 1) / tile.nb);
            const std::int64_t units = tile.nb * chunks, u0 = team_part(units, t, nt), u1 = team_part(units, t + 1, nt);
            for (std::int64_t u = u0; u < u1; ++u) {
                const std::int64_t ni = u / chunks, ch = u % chunks;
                const std::int64_t i0 = team_part(Ig, ch, chunks), i1 = team_part(Ig, ch + 1, chunks);
                col2im(g, nxc ? col : col + i0 * g.kernel_numel() * C, tile, grp, ni, ni + 1, i0, i1, s.x);
            }
            break;
        }
        case ConvKind::WeightGrad: {
            const std::int64_t r0 = team_part(R, t, nt), r1 = team_part(R, t + 1, nt);
            T* dw = const_cast<T*>(wg);
            if (!nxc) {  // dW_g[Og × r] += u_g[Og × C] · colᵀ[C × r], colᵀ made panel by panel
                auto cols_t = [&](std::int64_t k0, std::int64_t kc, std::int64_t j0, std::int64_t n, std::int64_t width,
                                  T* dst) {
                    im2col_ncx(g, s.x, tile, grp, r0 + j0, r0 + j0 + n, k0, k0 + kc, dst, PanelLayout{1, width, width * kc},
                               PanelLayout{width});
                    zero_panel_tail(dst, n, width, kc);
                };
                gemm_from<T>(false, Og, r1 - r0, C, T(1), om, ldo, panel_source<T>(cols_t), s.w_beta, dw + r0, R);
            } else {  // dWk_g[Og × r] += u_gᵀ[Og × C] · col[C × r]
                barrier();
                gemm<T>(true, false, Og, r1 - r0, C, T(1), om, ldo, col + r0, R, s.w_beta, dw + r0, R);
            }
            break;
        }
    }
}

// The NCX transposed kernel on the channels i0, .. of group `grp` whose rows of Wm_gᵀ `a`
// holds (packed by the caller), over a tile: the GEMM makes only those channels' rows of col
// (u staged in `stage` when the tile spans several images), and col2im adds them into those
// channels. Threads that take disjoint channel ranges share nothing, not even a barrier.
template <class T>
void transposed_channels(const Step<T>& s, const PackedA<T>& a, const ColTile& tile, std::int64_t grp, std::int64_t i0,
                         T* col, T* stage) {
    if (tile.nb > 1) {  // u_g of several images, staged as one [Og × C] matrix
        s.os.gather(s.o, tile, grp, stage, 0, s.g.Og);
        transposed_col2im(s, a, tile, grp, i0, stage, tile.cols(), col);
    } else {
        transposed_col2im(s, a, tile, grp, i0, s.os.ncx(s.o, tile, grp), s.os.P, col);
    }
}

// A plan's operands and buffers: the executors below differ only in who takes which
// (tile, group) units, with which thread's buffers.
template <class T>
struct Exec {
    const ConvPlan& p;
    const ConvGeometry& g;
    T *x, *o, *w;                // i-side, o-side, weight (roles as in run_conv)
    Buffer<T> col, stage, wk;    // column buffers, staging buffers, the k-major weight (NXC)
    std::vector<PackedA<T>> packed;
    OSide<T> os;

    Exec(const ConvPlan& plan, const ConvGeometry& geom, T* x_, T* o_, T* w_)
        : p(plan), g(geom), x(x_), o(o_), w(w_), os{geom, geom.out_numel()} {
        col = Buffer<T>(p.col_copies() * p.col_elems);
        stage = Buffer<T>(p.buffers * p.stage_elems);
        const std::int64_t R = g.R(), Og = g.Og;
        if (p.k_major) {
            if (p.kind == ConvKind::WeightGrad) {  // accumulated over tiles, like w itself
                wk = Buffer<T>(g.G * Og * R);
                std::fill_n(wk.data(), wk.size(), T(0));
            } else {
                wk = pack_k_major(g, w);
            }
        }
        const bool tr = p.kind == ConvKind::Transposed;
        if (p.pack_weight)
            for (std::int64_t grp = 0; grp < g.G; ++grp)
                packed.emplace_back(tr, tr ? R : Og, tr ? Og : R, w + grp * Og * R, R, p.team);
    }
    T* wm() { return p.k_major ? wk.data() : w; }  // the weight matrix in the row order of col
    Step<T> step(T* weight_matrix, T w_beta = T(1)) const { return {p.kind, g, os, x, o, weight_matrix, &packed, w_beta}; }
    T* col_of(int id) { return col.empty() ? nullptr : col.data() + id * p.col_elems; }
    T* stage_of(int id) { return stage.empty() ? nullptr : stage.data() + id * p.stage_elems; }
    std::int64_t units() const { return static_cast<std::int64_t>(p.tiles.size()) * g.G; }
    const ColTile& tile_of(std::int64_t u) const { return p.tiles[static_cast<std::size_t>(u / g.G)]; }
};

template <class T>
void run_serial(Exec<T>& e) {
    const Step<T> s = e.step(e.wm());
    for (const ColTile& tile : e.p.tiles)
        for (std::int64_t grp = 0; grp < e.g.G; ++grp) group_step(s, tile, grp, e.col_of(0), e.stage_of(0), 0, 1);
}

template <class T>
void run_by_partials(Exec<T>& e) {
    const std::int64_t G = e.g.G, wsize = G * e.g.Og * e.g.R(), ntiles = static_cast<std::int64_t>(e.p.tiles.size());
    Buffer<T> partial(e.p.partial_elems);
    T* const wm = e.wm();
    const vec::Kernels<T>& vk = vec::active_kernels<T>();
    auto unit = [&](std::int64_t u, T* my_col, T* my_stage) {  // writes its (tile, group) part of its tile's partial
        group_step(e.step(partial.data() + (u / G) * wsize, T(0)), e.tile_of(u), u % G, my_col, my_stage, 0, 1);
    };
    auto reduce = [&](std::int64_t e0, std::int64_t e1) {  // wm += the partials, in tile order
        for (std::int64_t t = 0; t < ntiles; ++t) vk.axpy(e1 - e0, T(1), partial.data() + t * wsize + e0, wm + e0);
    };
    if (e.p.team == 1) {
        for (std::int64_t u = 0; u < e.units(); ++u) unit(u, e.col_of(0), e.stage_of(0));
        reduce(0, wsize);
        return;
    }
#pragma omp parallel num_threads(e.p.team)
    {
        const int id = omp_get_thread_num(), team = omp_get_num_threads();
#pragma omp for schedule(static)
        for (std::int64_t u = 0; u < e.units(); ++u) unit(u, e.col_of(id), e.stage_of(id));
        reduce(team_part(wsize, id, team), team_part(wsize, id + 1, team));
    }
}

template <class T>
void run_by_images(Exec<T>& e) {  // tiles are chunks of one image each (nb = 1)
    const Step<T> s = e.step(e.wm());
#pragma omp parallel num_threads(e.p.team)
    {
        const int id = omp_get_thread_num(), team = omp_get_num_threads();
        const std::int64_t n0 = team_part(e.g.N, id, team), n1 = team_part(e.g.N, id + 1, team);
        for (const ColTile& tile : e.p.tiles)
            if (tile.n0 >= n0 && tile.n0 < n1)
                for (std::int64_t grp = 0; grp < e.g.G; ++grp) group_step(s, tile, grp, e.col_of(id), e.stage_of(id), 0, 1);
    }
}

template <class T>
void run_by_channels(Exec<T>& e) {  // col split by rows (ConvPlan::col_part)
    const ConvGeometry& g = e.g;
    const Step<T> s = e.step(e.wm());
    const std::int64_t Kn = g.kernel_numel(), R = g.R(), Og = g.Og;
#pragma omp parallel num_threads(e.p.team)
    {
        const int id = omp_get_thread_num(), team = omp_get_num_threads();
        const std::int64_t i0 = team_part(g.Ig, id, team), i1 = team_part(g.Ig, id + 1, team);
        const std::int64_t at = e.p.channel_col_offset(g, id, team);  // this thread's part of col
        std::vector<PackedA<T>> mine;  // each group's Wm_gᵀ rows of these channels
        for (std::int64_t grp = 0; grp < g.G; ++grp) mine.emplace_back(true, (i1 - i0) * Kn, Og, e.w + grp * Og * R + i0 * Kn, R);
        for (const ColTile& tile : e.p.tiles)
            for (std::int64_t grp = 0; grp < g.G; ++grp)
                transposed_channels(s, mine[static_cast<std::size_t>(grp)], tile, grp, i0, e.col.data() + at,
                                    e.stage_of(id));
    }
}

template <class T>
void run_by_units(Exec<T>& e) {
    const Step<T> s = e.step(e.wm());
#pragma omp parallel num_threads(e.p.team)
    {
        const int id = omp_get_thread_num();
#pragma omp for schedule(static)
        for (std::int64_t u = 0; u < e.units(); ++u) group_step(s, e.tile_of(u), u % e.g.G, e.col_of(id), e.stage_of(id), 0, 1);
    }
}

template <class T>
void run_by_groups(Exec<T>& e) {
    const Step<T> s = e.step(e.wm());
#pragma omp parallel num_threads(e.p.team)
    {
        const int id = omp_get_thread_num();
        for (const ColTile& tile : e.p.tiles) {
#pragma omp for schedule(static)
            for (std::int64_t grp = 0; grp < e.g.G; ++grp) group_step(s, tile, grp, e.col_of(id), e.stage_of(id), 0, 1);
        }
    }
}

template <class T>
void run_together(Exec<T>& e) {
    const Step<T> s = e.step(e.wm());
    // Barrier after each step: the next one overwrites the shared buffers and may add into
    // the same outputs.
#pragma omp parallel num_threads(e.p.team)
    {
        const int id = omp_get_thread_num(), team = omp_get_num_threads();
        for (const ColTile& tile : e.p.tiles)
            for (std::int64_t grp = 0; grp < e.g.G; ++grp) {
                group_step(s, tile, grp, e.col_of(0), e.stage_of(0), id, team);
#pragma omp barrier
            }
    }
}

void check_operand(const Tensor& t, const Shape& want, const char* what, const char* fn) {
    if (!t.defined()) fail(what, fn, ": ", what, " is undefined");
    if (t.shape() != want)
        fail(what, fn, ": ", what, " has shape ", shape_str(t.shape()), ", the geometry needs ", shape_str(want));
    if (!is_float(t.dtype())) fail(what, fn, ": ", what, " has dtype ", dtype_name(t.dtype()), ", a float dtype is needed");
}

// Runs `kind` with inputs a, b (roles as detail::run_conv's) and returns the result in the
// inputs' dtype; a defined `bias` is added to every result channel before the one rounding.
// With `relu` (forward and transposed), relu of that result, in the pass that adds the bias
// (f16/bf16: of the rounded result, as tg::relu would give).
Tensor dispatch(ConvKind kind, const Tensor& a, const Tensor& b, const Tensor& bias, const ConvGeometry& g, const char* fn,
                bool relu = false) {
    g.validate(fn);
    if (a.dtype() != b.dtype())
        fail("dtype", fn, ": operand dtypes differ (", dtype_name(a.dtype()), " and ", dtype_name(b.dtype()), ")");
    const DType dt = a.dtype();
    const Shape out_shape =
        kind == ConvKind::Forward ? g.out_shape() : kind == ConvKind::Transposed ? g.in_shape() : g.weight_shape();
    if (bias.defined()) {
        const std::int64_t C = kind == ConvKind::Forward ? g.G * g.Og : g.G * g.Ig;
        if (bias.shape() != Shape{C})
            fail("bias", fn, ": bias has shape ", shape_str(bias.shape()), ", the result ", shape_str(out_shape), " has ", C,
                 " channels");
        if (!is_float(bias.dtype())) fail("bias", fn, ": bias has dtype ", dtype_name(bias.dtype()), ", a float dtype is needed");
    }
    if (is_16bit(dt)) {
        const Tensor out = detail::conv_16bit(kind, a, b, bias, g, out_shape);
        return relu ? tg::relu(out) : out;
    }
    const Tensor A = a.contiguous(), B = b.contiguous(), bc = bias.defined() ? bias.to(dt).contiguous() : Tensor();
    if (g.N == 0) return Tensor::zeros(out_shape, dt);
    const ConvPlan p = detail::plan_call(kind, g, dt);
    Tensor out = p.writes_all ? Tensor::empty(out_shape, dt) : Tensor::zeros(out_shape, dt);
    with_compute_type(dt, [&](auto tag) {
        using T = decltype(tag);
        detail::run_conv<T>(p, g, A.data<T>(), B.data<T>(), out.data<T>());
        if (bc.defined() || relu) {
            const std::int64_t C = out_shape[g.layout == Layout::NCX ? 1 : out_shape.size() - 1];
            detail::add_bias(out.data<T>(), bc.defined() ? bc.data<T>() : nullptr, g.N, C, out.numel() / (g.N * C), g.layout, relu);
        }
    });
    return out;
}

}  // namespace

namespace detail {

ConvPlan plan_call(ConvKind kind, const ConvGeometry& g, DType ct) {
    ConvPlan p = plan_conv(kind, g, team_size(2.0 * g.macs(), team_min_flops()), workspace_budget(), dtype_size(ct),
                           transposed_algo(), small_conv());
    // The direct kernels fork once and share nothing (no barriers, no shared buffers): a
    // team pays off on a quarter of the work a GEMM step needs.
    if (p.strategy == ConvStrategy::Small || p.strategy == ConvStrategy::Rows) p.team = team_size(2.0 * g.macs(), team_min_flops() / 4);
    return p;
}

template <class T>
void run_conv(const ConvPlan& p, const ConvGeometry& g, const T* a, const T* b, T* out) {
    // The kernels' operands by side: x i-side, o o-side, w the weight; inputs are only read.
    const ConvKind k = p.kind;
    T* x = k == ConvKind::Transposed ? out : const_cast<T*>(a);
    T* o = k == ConvKind::Forward ? out : const_cast<T*>(k == ConvKind::Transposed ? a : b);
    T* w = k == ConvKind::WeightGrad ? out : const_cast<T*>(b);
    switch (p.strategy) {
        case ConvStrategy::Depthwise:
            switch (p.kind) {
                case ConvKind::Forward: depthwise_forward<T>(g, x, w, o); break;
                case ConvKind::Transposed: depthwise_transposed<T>(g, o, w, x); break;
                case ConvKind::WeightGrad: depthwise_weight_grad<T>(g, x, o, w); break;
            }
            return;
        case ConvStrategy::Phases: conv_transposed_phases<T>(g, o, w, x); return;
        case ConvStrategy::Small:
        case ConvStrategy::Rows: {
            const bool small = p.strategy == ConvStrategy::Small;
            bool done = true;
            switch (k) {
                case ConvKind::Forward:
                    if (small) small_forward<T>(g, x, w, o, p.team);
                    else rows_forward<T>(g, x, w, o, p.team);
                    break;
                case ConvKind::Transposed:
                    done = small ? small_transposed<T>(g, o, w, x, p.team) : rows_transposed<T>(g, o, w, x, p.team);
                    break;
                case ConvKind::WeightGrad:
                    done = small ? small_weight_grad<T>(g, x, o, w, p.team) : rows_weight_grad<T>(g, x, o, w, p.team);
                    break;
            }
            if (done) return;
            // Declined (a non-finite operand, see conv_small.hpp, conv_rows.hpp): the GEMM path, on a zeroed result.
            if (k == ConvKind::Transposed) std::fill_n(x, g.N * g.G * g.Ig * g.in_numel(), T(0));
            run_conv<T>(plan_conv(k, g, p.team, workspace_budget(), sizeof(T), TransposedAlgo::Col2im, SmallConv::Never), g,
                        a, b, out);
            return;
        }
        default: break;
    }
    Exec<T> e(p, g, x, o, w);
    switch (p.strategy) {
        case ConvStrategy::Serial: run_serial(e); break;
        case ConvStrategy::Partials: run_by_partials(e); break;
        case ConvStrategy::Images: run_by_images(e); break;
        case ConvStrategy::Channels: run_by_channels(e); break;
        case ConvStrategy::Units: run_by_units(e); break;
        case ConvStrategy::Groups: run_by_groups(e); break;
        default: run_together(e); break;
    }
    if (p.k_major && p.kind == ConvKind::WeightGrad) unpack_k_major(g, e.wk.data(), w);
}

template void run_conv<float>(const ConvPlan&, const ConvGeometry&, const float*, const float*, float*);
template void run_conv<double>(const ConvPlan&, const ConvGeometry&, const double*, const double*, double*);

}  // namespace detail

Tensor conv_forward(const Tensor& x, const Tensor& W, const ConvGeometry& g, const Tensor& bias, bool relu) {
    check_operand(x, g.in_shape(), "data", "conv_forward");
    check_operand(W, g.weight_shape(), "filter", "conv_forward");
    return dispatch(ConvKind::Forward, x, W, bias, g, "conv_forward", relu);
}

Tensor conv_transposed(const Tensor& u, const Tensor& W, const ConvGeometry& g, const Tensor& bias, bool relu) {
    check_operand(u, g.out_shape(), "data", "conv_transposed");
    check_operand(W, g.weight_shape(), "filter", "conv_transposed");
    return dispatch(ConvKind::Transposed, u, W, bias, g, "conv_transposed", relu);
}

Tensor conv_weight_grad(const Tensor& x, const Tensor& u, const ConvGeometry& g) {
    check_operand(x, g.in_shape(), "data", "conv_weight_grad");
    check_operand(u, g.out_shape(), "grad_output", "conv_weight_grad");
    return dispatch(ConvKind::WeightGrad, x, u, Tensor(), g, "conv_weight_grad");
}

}  // namespace tg
