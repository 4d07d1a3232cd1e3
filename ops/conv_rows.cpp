#include "tapegrad/ops/conv_rows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <omp.h>

#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_axes.hpp"
#include "tapegrad/ops/conv_plan.hpp"
#include "tapegrad/ops/conv_rows_kernels.hpp"
#include "tapegrad/ops/vec.hpp"

namespace tg {

namespace simd_rows {
namespace {

// Isa::scalar: the same sums, element by element.
template <class T>
void span_scalar(const Span<T>& a) {
    for (std::int64_t j = 0; j < a.n; ++j)
        for (std::int64_t c = 0; c < a.cp; ++c) {
            T s = 0;
            for (std::int64_t t = 0; t < a.ntaps; ++t)
                for (std::int64_t r = 0; r < a.nred; ++r) s += a.in[t][j * a.istep + r] * a.w[t][r * a.cp + c];
            a.out[j * a.ostep + c] = s;
        }
}

template <class T>
void grad_scalar(const GradSpan<T>& a) {
    for (std::int64_t r = 0; r < a.nred; ++r)
        for (std::int64_t c = 0; c < a.cp; ++c) {
            T s = a.accumulate ? a.dw[r * a.cp + c] : T(0);
            for (std::int64_t row = 0; row < a.nrows; ++row)
                for (std::int64_t j = 0; j < a.n; ++j) s += a.in[row][j * a.istep + r] * a.u[row][j * a.cp + c];
            a.dw[r * a.cp + c] = s;
        }
}

}  // namespace

const Kernels<float> f32_scalar = {1, &span_scalar<float>, &grad_scalar<float>};
const Kernels<double> f64_scalar = {1, &span_scalar<double>, &grad_scalar<double>};

}  // namespace simd_rows

namespace {

template <class T>
const simd_rows::Kernels<T>& rows_kernels() {
    static const simd::TypedDispatch<simd_rows::Kernels> d{
        {simd_rows::f32_scalar, simd_rows::f32_avx2, simd_rows::f32_avx512},
        {simd_rows::f64_scalar, simd_rows::f64_avx2, simd_rows::f64_avx512}};
    return d.active<T>();
}

// One call's layout: the summed operand ("source": x forward, u transposed) and the result
// ("destination"), both per axis; the copy's last-axis halo; the last axis' spans.
struct Rows {
    bool transposed = false, nxc = false;
    int D = 0;
    std::int64_t G = 1, Cr = 0, Cd = 0, cp = 0, Kn = 1, KL = 1;
    Shape src, dst;                 // spatial sizes
    std::int64_t src_n = 1, dst_n = 1;  // ∏ of each
    std::int64_t src_rows = 1, dst_rows = 1;  // ∏ of the outer axes
    std::int64_t hl = 0, Lp = 0;    // zeros before a copied row, its length with both halos
    // Last-axis spans: the first result, the count, the source step between results; per
    // tap k of the last axis, its source offset (positions from the copied row's start) or
    // kNoTap where the span's results do not take that tap.
    static constexpr std::int64_t kNoTap = std::numeric_limits<std::int64_t>::min();
    struct SpanDef {
        std::int64_t first, count, in_step;
        std::vector<std::int64_t> off;  // per k < KL
    };
    std::vector<SpanDef> spans;
    // Per result row and outer tap (C order over the outer axes: Ko of them), the source row
    // the tap reads, or -1 where it reads outside the source (or, transposed, between its
    // positions): such taps are left out.
    std::int64_t Ko = 1;
    std::vector<std::int64_t> srow;
    std::int64_t source_row(std::int64_t drow, std::int64_t ko) const { return srow[static_cast<std::size_t>(drow * Ko + ko)]; }

    Rows(const ConvGeometry& g, bool tr, std::int64_t lanes) : transposed(tr), nxc(g.layout == Layout::NXC), D(g.D()), G(g.G) {
        Cr = tr ? g.Og : g.Ig;
        Cd = tr ? g.Ig : g.Og;
        cp = round_up(Cd, lanes);
        Kn = g.kernel_numel();
        src = tr ? g.out_size : g.in_size;
        dst = tr ? g.in_size : g.out_size;
        for (int a = 0; a < D; ++a) {
            src_n *= src[a];
            dst_n *= dst[a];
            if (a + 1 < D) {
                src_rows *= src[a];
                dst_rows *= dst[a];
            }
        }
        const int L = D - 1;
        KL = g.kernel[L];
        const std::int64_t s = g.stride[L], d = g.dilation[L], pb = g.pad_begin[L], Ls = src[L], Ld = dst[L];
        std::int64_t lo = 0, hi = Ls - 1;  // source positions read
        if (!tr) {
            SpanDef sp{0, Ld, s, {}};
            for (std::int64_t k = 0; k < KL; ++k) sp.off.push_back(k * d - pb);
            lo = std::min(lo, -pb);
            hi = std::max(hi, (Ld - 1) * s - pb + (KL - 1) * d);
            spans.push_back(sp);
        } else {
            for (std::int64_t rho = 0; rho < std::min(s, Ld); ++rho) {
                SpanDef sp{rho, (Ld - 1 - rho) / s + 1, 1, std::vector<std::int64_t>(static_cast<std::size_t>(KL), kNoTap)};
                bool any = false;
                for (std::int64_t k = 0; k < KL; ++k) {
                    const std::int64_t t = rho + pb - k * d;
                    if (floor_div(t, s) * s != t) continue;
                    const std::int64_t p0 = t / s;
                    sp.off[static_cast<std::size_t>(k)] = p0;
                    lo = std::min(lo, p0);
                    hi = std::max(hi, p0 + sp.count - 1);
                    any = true;
                }
                if (!any) sp.off.clear();  // no tap: the span's results are zeros
                spans.push_back(sp);
            }
        }
        hl = -lo;
        Lp = hi + 1 - lo;
        for (SpanDef& sp : spans)
            for (std::int64_t& o : sp.off)
                if (o != kNoTap) o += hl;
        Ko = Kn / KL;
        // Per outer axis, each coordinate's and tap's source coordinate (or -1); then their
        // C-order products, with the coordinates and taps counted like odometers.
        std::vector<std::vector<std::int64_t>> axis(static_cast<std::size_t>(L));
        for (int a = 0; a < L; ++a) {
            const std::size_t ua = static_cast<std::size_t>(a);
            for (std::int64_t q = 0; q < dst[ua]; ++q)
                for (std::int64_t k = 0; k < g.kernel[ua]; ++k) {
                    std::int64_t p = q * g.stride[ua] - g.pad_begin[ua] + k * g.dilation[ua];
                    if (tr) {
                        const std::int64_t t = q + g.pad_begin[ua] - k * g.dilation[ua];
                        p = floor_div(t, g.stride[ua]) * g.stride[ua] == t ? floor_div(t, g.stride[ua]) : -1;
                    }
                    axis[ua].push_back(p >= 0 && p < src[ua] ? p : -1);
                }
        }
        srow.resize(static_cast<std::size_t>(dst_rows * Ko));
        std::int64_t q[kMaxD] = {}, kk[kMaxD] = {};
        for (std::int64_t drow = 0; drow < dst_rows; ++drow) {
            for (std::int64_t ko = 0; ko < Ko; ++ko) {
                std::int64_t r = 0;
                for (int a = 0; a < L && r >= 0; ++a) {
                    const std::size_t ua = static_cast<std::size_t>(a);
                    const std::int64_t p = axis[ua][static_cast<std::size_t>(q[a] * g.kernel[ua] + kk[a])];
                    r = p < 0 ? -1 : r * src[ua] + p;
                }
                srow[static_cast<std::size_t>(drow * Ko + ko)] = r;
                for (int a = L - 1; a >= 0 && ++kk[a] == g.kernel[static_cast<std::size_t>(a)]; --a) kk[a] = 0;
            }
            for (int a = L - 1; a >= 0 && ++q[a] == dst[static_cast<std::size_t>(a)]; --a) q[a] = 0;
        }
    }
    // Whether some result row has no outer tap inside the source (its results read only padding).
    bool has_padding_rows() const {
        for (std::int64_t drow = 0; drow < dst_rows; ++drow)
            if (std::all_of(srow.begin() + drow * Ko, srow.begin() + (drow + 1) * Ko, [](std::int64_t r) { return r < 0; }))
                return true;
        return false;
    }

    std::int64_t copy_elems() const { return src_rows * Lp * Cr; }  // one (image, group)
};

// Rows of a grid per block: at least kBlockPositions positions where the grid has them
// (whole W × W blocks for the transposes, a row buffer within a core's L1).
constexpr std::int64_t kBlockPositions = 128;
std::int64_t rows_per_block(std::int64_t row_len, std::int64_t rows) {
    return std::min(rows, std::max<std::int64_t>(1, kBlockPositions / row_len));
}

// One (image, group) block of a tensor of G·C channels and S positions: NCX [c][p] at
// t + ng·C·S, NXC [p][c] (G·C apart) at t + n·S·G·C + g·C.
struct Side {
    bool nxc;
    std::int64_t G, C, S;
    template <class T>
    T* at(T* t, std::int64_t ng) const { return nxc ? t + (ng / G) * S * G * C + (ng % G) * C : t + ng * C * S; }
};

// Positions [p0, p0 + n) of a block as rows of channels [c0, c1), ld apart: d[i·ld + c - c0].
template <class T>
void gather(const Side& s, const T* block, std::int64_t p0, std::int64_t n, T* d, std::int64_t ld, std::int64_t c0,
            std::int64_t c1) {
    if (!s.nxc) vec::transpose(block + c0 * s.S + p0, s.S, c1 - c0, n, d, ld);
    else
        for (std::int64_t i = 0; i < n; ++i) std::copy_n(block + (p0 + i) * s.G * s.C + c0, c1 - c0, d + i * ld);
}

// The inverse: rows of channels, ld apart, into positions [p0, p0 + n) of a block.
template <class T>
void scatter(const Side& s, const T* r, std::int64_t ld, std::int64_t p0, std::int64_t n, T* block) {
    if (!s.nxc) vec::transpose(r, ld, n, s.C, block + p0, s.S);
    else
        for (std::int64_t i = 0; i < n; ++i) std::copy_n(r + i * ld, s.C, block + (p0 + i) * s.G * s.C);
}

// Rows [row0, row1) of the source's (image, group) block, channels [c0, c1) (w of them),
// positions [l0, l1) of each, into rows of positions, channels innermost, with zeros on the
// halo (the left one with l0 = 0, the right one with l1 = Ls):
// dst[(row·Lp + hl + l)·w + c - c0] = source (c, row·Ls + l). NCX: a row of a whole vector
// or more is transposed into place; shorter rows (whole only) through `tmp` (a block of rows
// transposed at once, then its rows copied into place), the transposes' edges being element
// by element. NXC: position by position.
template <class T>
void copy_source(const Rows& R, const Side& side, const T* block, T* dst, T* tmp, std::int64_t row0, std::int64_t row1,
                 std::int64_t c0, std::int64_t c1, std::int64_t l0, std::int64_t l1) {
    const std::int64_t Ls = R.src[static_cast<std::size_t>(R.D - 1)], w = c1 - c0;
    const bool direct = side.nxc || Ls >= simd_rows::kMaxLanes;
    if (!direct) gather(side, block, row0 * Ls, (row1 - row0) * Ls, tmp, w, c0, c1);
    for (std::int64_t row = row0; row < row1; ++row) {
        T* d = dst + row * R.Lp * w;
        if (l0 == 0) std::fill_n(d, R.hl * w, T(0));
        if (direct) gather(side, block, row * Ls + l0, l1 - l0, d + (R.hl + l0) * w, w, c0, c1);
        else std::copy_n(tmp + (row - row0) * Ls * w, Ls * w, d + R.hl * w);
        if (l1 == Ls) std::fill_n(d + (R.hl + Ls) * w, (R.Lp - R.hl - Ls) * w, T(0));
    }
}

// Images per chunk: the source copies (and `extra` elements more per (image, group)) of a
// chunk within a core's L2 (and the workspace budget), so that they are read from it while
// the chunk is computed and the workspace does not grow with the batch (vol3d's weight
// gradient at N = 64: 101.5 -> 53.4 ms, 44.9 -> 1.6 MiB); at least one image.
// The weight gradient's most slices of Cr reduction channels (slices of at least 8).
std::int64_t grad_slices(std::int64_t Cr) { return std::max<std::int64_t>(1, Cr / 8); }

std::int64_t chunk_images(const Rows& R, std::int64_t N, std::int64_t extra, std::size_t eb) {
    const std::int64_t per_image = R.G * (R.copy_elems() + extra) * static_cast<std::int64_t>(eb);
    const std::int64_t bytes = std::min(kTileCacheBytes, workspace_budget());
    return std::clamp<std::int64_t>(bytes / std::max<std::int64_t>(1, per_image), 1, std::max<std::int64_t>(1, N));
}

}  // namespace

std::int64_t rows_grad_image_parts(const ConvGeometry& g) {
    return g.Ig < kRowsMinChannels ? std::clamp<std::int64_t>(g.N, 1, kRowsGradImageParts) : 1;
}

bool rows_grad_takes_runs(const ConvGeometry& g) { return grad_slices(g.Ig) == 1 && g.dilation.back() == 1; }

std::int64_t rows_padded_channels(std::int64_t channels, std::size_t elem_bytes) {
    const std::int64_t lanes = elem_bytes == 8 ? rows_kernels<double>().lanes : rows_kernels<float>().lanes;
    return round_up(channels, lanes);
}

namespace {

// Both kinds: `src` the summed operand, `wp` the packed weight ([group][tap][Cr][cp]).
template <class T>
void run_rows(const ConvGeometry& g, const Rows& R, const T* src, const T* wp, T* dst, int team) {
    const simd_rows::Kernels<T>& k = rows_kernels<T>();
    const std::int64_t N = g.N, G = R.G, D = R.D, L = D - 1;
    const std::int64_t copy = R.copy_elems(), chunk = chunk_images(R, N, 0, sizeof(T));
    Buffer<T> rows(chunk * G * copy);
    const std::int64_t Ld = R.dst[static_cast<std::size_t>(L)], Ls = R.src[static_cast<std::size_t>(L)];
    // Per chunk of images: the copies in blocks of source rows, then the units: blocks of
    // result rows of one (image, group), computed into a row buffer and transposed into the
    // result at once. In a team, a chunk's (image, group) pairs are cut in blocks enough for
    // two a thread: one image's 3-D result of 4³, 16 rows, was one block, for one thread of
    // two (a 48 -> 256 k5 layer's forward call 1.67 -> 1.49 ms at 2 threads), and of 6³, 36
    // rows of 6, 2 blocks of 21 and 15 rows.
    const auto per_block = [&](std::int64_t len, std::int64_t n) {
        const std::int64_t per = rows_per_block(len, n), want = ceil_div(2 * team, chunk * G);
        return team > 1 && ceil_div(n, per) < want ? ceil_div(n, want) : per;
    };
    const std::int64_t sb = per_block(Ls, R.src_rows), sblocks = (R.src_rows + sb - 1) / sb;
    const std::int64_t rb = per_block(Ld, R.dst_rows), blocks = (R.dst_rows + rb - 1) / rb;
    // Blocks of one long row (1-D layers, or a few long rows) are split in parts of positions
    // when a chunk has fewer blocks than the team has threads, the copies' and the results'
    // (a 1-D layer of 2048 positions, one image per chunk, ran on one thread of two). A part
    // has at least kMaxLanes positions, so a row shorter than a vector (copied whole through
    // `tmp`) is never split.
    const auto parts_of = [&](std::int64_t rows_per, std::int64_t nblocks, std::int64_t len) -> std::int64_t {
        if (rows_per > 1) return 1;
        return std::clamp<std::int64_t>(ceil_div(team, chunk * G * nblocks), 1,
                                        std::max<std::int64_t>(1, len / simd_rows::kMaxLanes));
    };
    const std::int64_t sparts = parts_of(sb, sblocks, Ls), parts = parts_of(rb, blocks, Ld);
    const int nt = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(team, chunk * G * blocks * parts)));
    const std::int64_t per_thread = std::max(rb * Ld * R.cp, sb * Ls * R.Cr);
    Buffer<T> out_rows(nt * per_thread);
    const std::int64_t Ko = R.Ko, os = R.transposed ? g.stride[static_cast<std::size_t>(L)] : 1, ostep = os * R.cp;
    const Side ss{R.nxc, G, R.Cr, R.src_n}, ds{R.nxc, G, R.Cd, R.dst_n};
#pragma omp parallel num_threads(nt)
    {
        T* const ob0 = out_rows.data() + omp_get_thread_num() * per_thread;
        // Per result row: its outer taps that read inside the source (the source row, the
        // tap), then per span the taps' input and weight pointers.
        std::vector<std::int64_t> orow_v(static_cast<std::size_t>(Ko)), otap_v(static_cast<std::size_t>(Ko));
        std::vector<const T*> in_v(static_cast<std::size_t>(R.Kn)), wt_v(static_cast<std::size_t>(R.Kn));
        std::int64_t *orow = orow_v.data(), *otap = otap_v.data();
        const T **in = in_v.data(), **wt = wt_v.data();
        for (std::int64_t n0 = 0; n0 < N; n0 += chunk) {
            const std::int64_t nc = std::min(chunk, N - n0);
#pragma omp for schedule(static)
            for (std::int64_t cu = 0; cu < nc * G * sblocks * sparts; ++cu) {
                const std::int64_t lp = cu % sparts, ngl = cu / sparts / sblocks, b = cu / sparts % sblocks;
                copy_source(R, ss, ss.at(src, n0 * G + ngl), rows.data() + ngl * copy, ob0, b * sb,
                            std::min(R.src_rows, (b + 1) * sb), 0, R.Cr, Ls * lp / sparts, Ls * (lp + 1) / sparts);
            }
#pragma omp for schedule(static)
            for (std::int64_t un = 0; un < nc * G * blocks * parts; ++un) {
                const std::int64_t part = un % parts, ngl = un / parts / blocks, ng = n0 * G + ngl, row0 = un / parts % blocks * rb;
                const std::int64_t row1 = std::min(R.dst_rows, row0 + rb), gi = ng % G;
                const std::int64_t p0 = Ld * part / parts, p1 = Ld * (part + 1) / parts;  // the part's positions
                for (std::int64_t drow = row0; drow < row1; ++drow) {
                    T* const ob = ob0 + (drow - row0) * Ld * R.cp;
                    std::int64_t nto = 0;
                    for (std::int64_t ko = 0; ko < Ko; ++ko) {
                        const std::int64_t srow = R.source_row(drow, ko);
                        if (srow < 0) continue;
                        orow[nto] = srow;
                        otap[nto++] = ko;
                    }
                    const T* rimg = rows.data() + ngl * copy;
                    const T* wg = wp + gi * R.Kn * R.Cr * R.cp;
                    for (const Rows::SpanDef& sp : R.spans) {
                        // The span's results in [p0, p1): j0 <= j < j1 (result first + j · step).
                        const std::int64_t j0 = std::clamp<std::int64_t>(ceil_div(p0 - sp.first, os), 0, sp.count);
                        const std::int64_t j1 = std::clamp<std::int64_t>(ceil_div(p1 - sp.first, os), 0, sp.count);
                        if (j1 <= j0) continue;
                        std::int64_t ntaps = 0;
                        if (!sp.off.empty())
                            for (std::int64_t o = 0; o < nto; ++o)
                                for (std::int64_t kl = 0; kl < R.KL; ++kl) {
                                    const std::int64_t off = sp.off[static_cast<std::size_t>(kl)];
                                    if (off == Rows::kNoTap) continue;
                                    in[ntaps] = rimg + (orow[o] * R.Lp + off + j0 * sp.in_step) * R.Cr;
                                    wt[ntaps++] = wg + (otap[o] * R.KL + kl) * R.Cr * R.cp;
                                }
                        k.span({j1 - j0, ntaps, R.Cr, R.cp, in, wt, sp.in_step * R.Cr, ob + sp.first * R.cp + j0 * ostep, ostep});
                    }
                }
                // The block's rows into the result.
                if (parts == 1) scatter(ds, ob0, R.cp, row0 * Ld, (row1 - row0) * Ld, ds.at(dst, ng));
                else scatter(ds, ob0 + p0 * R.cp, R.cp, row0 * Ld + p0, p1 - p0, ds.at(dst, ng));
            }
        }
    }
}

// W[g, o, i, k] (o the o-side channel, i the i-side one) as one [Cr][cp] block per (group,
// tap): forward [g][k][i][o], transposed [g][k][o][i], padding channels 0. Per (group,
// reduction channel) its [Cd][Kn] taps, transposed into column r of every tap's block
// (vec::transpose: 16 × 16 blocks in registers; element by element this was 5% of
// vol3d_k4s2's forward).
template <class T>
Buffer<T> pack_weight(const Rows& R, const T* w, bool transposed, int team) {
    Buffer<T> wp(R.G * R.Kn * R.Cr * R.cp);
    const std::int64_t Og = transposed ? R.Cr : R.Cd, Ig = transposed ? R.Cd : R.Cr, block = R.Cr * R.cp;
    const std::int64_t rows = R.G * R.Cr;
    // A result channel's taps follow the last one's at this stride.
    const std::int64_t lds = transposed ? R.Kn : Ig * R.Kn;
    const int nt = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(team, rows / 8)));
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t gr = 0; gr < rows; ++gr) {
        const std::int64_t gi = gr / R.Cr, r = gr % R.Cr;
        T* wg = wp.data() + gi * R.Kn * block;
        const T* src = w + (transposed ? (gi * Og + r) * Ig : gi * Og * Ig + r) * R.Kn;
        vec::transpose(src, lds, R.Cd, R.Kn, wg + r * R.cp, block);
        for (std::int64_t kt = 0; kt < R.Kn; ++kt)
            std::fill(wg + kt * block + r * R.cp + R.Cd, wg + kt * block + (r + 1) * R.cp, T(0));
    }
    return wp;
}

}  // namespace

template <class T>
void rows_forward(const ConvGeometry& g, const T* x, const T* w, T* y, int team) {
    const Rows R(g, false, rows_kernels<T>().lanes);
    // W[g, o, i, k] as [g][k][i][o < cp].
    Buffer<T> wp = pack_weight(R, w, false, team);
    run_rows(g, R, x, wp.data(), y, team);
}

template <class T>
bool rows_transposed(const ConvGeometry& g, const T* u, const T* w, T* r, int team) {
    const Rows R(g, true, rows_kernels<T>().lanes);
    if (!vec::all_finite(w, R.G * R.Cr * R.Cd * R.Kn)) return false;
    // W[g, o, i, k] as [g][k][o][i < cp].
    Buffer<T> wp = pack_weight(R, w, true, team);
    run_rows(g, R, u, wp.data(), r, team);
    return true;
}

namespace {

// The weight gradient's sums over all g.N images by one team (its grid below), as one
// [Cr][cp] block per (group, tap): dwt[g][k][i][o < cp], every element written.
template <class T>
bool weight_grad_team(const ConvGeometry& g, const Rows& R, const T* x, const T* u, T* dwt, int team) {
    const simd_rows::Kernels<T>& k = rows_kernels<T>();
    const std::int64_t N = g.N, G = R.G, L = R.D - 1;
    // Non-finite operands are found in the sums (every element of x and u that the GEMM path
    // multiplies, this kernel multiplies too, by x or the halo's zeros, but for u on rows
    // that read only padding: those are checked directly).
    if (R.has_padding_rows() && !vec::all_finite(u, N * G * R.Cd * R.dst_n)) return false;
    const Rows::SpanDef& sp = R.spans[0];
    const std::int64_t Ld = R.dst[static_cast<std::size_t>(L)], Ls = R.src[static_cast<std::size_t>(L)];
    const std::int64_t copy = R.copy_elems(), ucopy = R.dst_n * R.cp, block = R.Cr * R.cp;
    const std::int64_t chunk = chunk_images(R, N, ucopy, sizeof(T));
    Buffer<T> rows(chunk * G * copy);
    // The team is a grid: blocks of groups × slices of their reduction channels × members
    // sharing a slice (each with a share of the block's (group, tap) pairs). Per chunk of
    // images, a slice's members copy its channels of x into a plane of its own
    // ([image, group][row][position][slice's channels]), and a block's threads gather its
    // groups' u (rows of positions, result channels innermost, zeros past Cd): what a thread
    // reads was written on its own core where the grid allows. (All copies shared by the team:
    // writing lines the other core had read made the copies 2-3× slower per byte, and the
    // interleaved channels of one copy shared lines through the prefetchers: dilated_d2 scaled
    // 1.5× at 2 threads.) Then per pair one block of the gradient, summed over the chunk's rows
    // on top of the chunks before: every sum runs over images and rows in order whatever the
    // chunks and the team, so any team gives the same bits.
    const std::int64_t plane = chunk * G * R.src_rows * R.Lp;  // a plane's elements per channel
    const std::int64_t sb = rows_per_block(Ls, R.src_rows), sblocks = (R.src_rows + sb - 1) / sb;
    const std::int64_t cs_max = grad_slices(R.Cr);
    // Fewer than 16 reduction channels (one slice of them): a pair sums the gradient of a
    // run of consecutive last-axis taps at once. At dilation 1 the run's taps read one
    // contiguous stretch of each copied row (tap k's channels at k·Cr) and their blocks of
    // the gradient follow one another, so a run is one sum over (taps in the run)·Cr
    // reduction rows: register tiles of more rows, each u vector loaded once for all of
    // them (dcgan_g4's 3 channels: a 3 × 4 tile per tap, half the sums a tile holds, before;
    // 1.30 -> 1.09 ms). Runs are as long as the team allows: every member keeps a pair.
    const bool merge = rows_grad_takes_runs(g);
    const std::int64_t runs = merge ? std::min(R.KL, ceil_div(team, G * R.Ko)) : R.KL;  // runs of taps per outer tap
    const std::int64_t units = R.Ko * runs;                                              // pairs per group
    const int nt = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(team, G * units * cs_max)));
    Buffer<T> urows(chunk * G * ucopy), tmps(nt * sb * Ls * R.Cr);
    const Side xs{R.nxc, G, R.Cr, R.src_n}, us{R.nxc, G, R.Cd, R.dst_n};
    std::vector<unsigned char> finite(static_cast<std::size_t>(nt), 1);  // per thread: its sums are finite
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        // This thread's place: block blk of gb (groups [g0, g1)), its thread j of tpg; of
        // those, slice sl of cs (channels [c0, c1)) and member m of P (pairs [q0, q1)).
        // Threads the grid does not fill only meet the barriers.
        const std::int64_t tid = omp_get_thread_num(), tn = omp_get_num_threads();
        const std::int64_t gb = std::min(G, tn), tpg = tn / gb, blk = tid / tpg, j = tid % tpg;
        const std::int64_t g0 = G * std::min(blk, gb) / gb, g1 = G * std::min(blk + 1, gb) / gb, ng = g1 - g0;
        const std::int64_t cs = std::min(cs_max, tpg), P = std::max<std::int64_t>(1, std::min(ng * units, tpg / cs));
        const bool active = blk < gb && j < cs * P;
        const std::int64_t sl = j % cs, m = j / cs, c0 = R.Cr * sl / cs, c1 = R.Cr * (sl + 1) / cs, w = c1 - c0;
        const std::int64_t q0 = g0 * units + (active ? ng * units * m / P : 0), q1 = g0 * units + (active ? ng * units * (m + 1) / P : 0);
        const std::int64_t ub = std::max<std::int64_t>(kBlockPositions, R.dst_n / tpg), ublocks = (R.dst_n + ub - 1) / ub;
        T* const xp = rows.data() + c0 * plane;  // this slice's plane
        std::vector<const T*> in, ur;
        for (std::int64_t n0 = 0; n0 < N; n0 += chunk) {
            const std::int64_t nc = std::min(chunk, N - n0);
            for (std::int64_t cu = m; active && cu < nc * ng * sblocks; cu += P) {
                const std::int64_t ngl = cu / (ng * sblocks) * G + g0 + cu / sblocks % ng, b = cu % sblocks;
                copy_source(R, xs, xs.at(x, n0 * G + ngl), xp + ngl * R.src_rows * R.Lp * w, tmps.data() + tid * sb * Ls * R.Cr,
                            b * sb, std::min(R.src_rows, (b + 1) * sb), c0, c1, 0, Ls);
            }
            for (std::int64_t cu = j; blk < gb && cu < nc * ng * ublocks; cu += tpg) {
                const std::int64_t ngl = cu / (ng * ublocks) * G + g0 + cu / ublocks % ng;
                const std::int64_t p0 = cu % ublocks * ub, p1 = std::min(R.dst_n, p0 + ub);
                T* ud = urows.data() + ngl * ucopy;
                gather(us, us.at(u, n0 * G + ngl), p0, p1 - p0, ud + p0 * R.cp, R.cp, 0, R.Cd);
                if (R.cp > R.Cd)
                    for (std::int64_t p = p0; p < p1; ++p) std::fill(ud + p * R.cp + R.Cd, ud + (p + 1) * R.cp, T(0));
            }
#pragma omp barrier
            for (std::int64_t pair = q0; pair < q1; ++pair) {
                // Group gi, outer tap ko, last-axis taps [k0, k1) (one tap unless merged).
                const std::int64_t gi = pair / units, ko = pair % units / runs, run = pair % runs;
                const std::int64_t k0 = R.KL * run / runs, k1 = R.KL * (run + 1) / runs, kt = ko * R.KL + k0;
                const std::int64_t off = sp.off[static_cast<std::size_t>(k0)], nred = (k1 - k0) * w;
                in.clear();
                ur.clear();
                for (std::int64_t n = 0; n < nc; ++n)
                    for (std::int64_t drow = 0; drow < R.dst_rows; ++drow) {
                        const std::int64_t srow = R.source_row(drow, ko);
                        if (srow < 0) continue;
                        const std::int64_t ngl = n * G + gi;
                        in.push_back(xp + ((ngl * R.src_rows + srow) * R.Lp + off) * w);
                        ur.push_back(urows.data() + ngl * ucopy + drow * Ld * R.cp);
                    }
                T* d = dwt + (gi * R.Kn + kt) * block + c0 * R.cp;
                if (n0 == 0 && in.empty()) std::fill_n(d, nred * R.cp, T(0));
                else if (!in.empty())
                    k.grad({Ld, static_cast<std::int64_t>(in.size()), nred, R.cp, in.data(), ur.data(), sp.in_step * w, d, n0 > 0});
                if (n0 + nc == N)
                    for (std::int64_t r = 0; r < nred; ++r) finite[static_cast<std::size_t>(tid)] &= vec::all_finite(d + r * R.cp, R.Cd);
            }
#pragma omp barrier
        }
    }
    // A sum that met an infinity or a NaN: the GEMM path, whose products with the padding's
    // zeros the reference never forms either but whose NaNs are the contract (conv_rows.hpp).
    return std::find(finite.begin(), finite.end(), 0) == finite.end();
}

}  // namespace

template <class T>
bool rows_weight_grad(const ConvGeometry& g, const T* x, const T* u, T* dw, int team) {
    const Rows R(g, false, rows_kernels<T>().lanes);
    const std::int64_t G = R.G, block = R.Cr * R.cp, dsize = G * R.Kn * block;
    // Fewer than 16 reduction channels: the images in kRowsGradImageParts parts (as many as
    // there are images, if fewer), each part's sums by one thread as a team of one would sum
    // them, the parts then added in order. The parts depend on the geometry alone, so any team
    // gives one thread's bits. (A team's grid of pairs reads every image's gathered u on both
    // cores, and with few reduction channels too few sums hide it: dcgan_g4 at 2 threads took
    // 0.88 ms by the grid, 0.71 at 1 thread.)
    const std::int64_t parts = rows_grad_image_parts(g);
    Buffer<T> dwt(parts * dsize);
    int nt = std::max(1, team);
    if (parts == 1) {
        if (!weight_grad_team(g, R, x, u, dwt.data(), nt)) return false;
    } else {
        const Side xs{R.nxc, G, R.Cr, R.src_n}, us{R.nxc, G, R.Cd, R.dst_n};
        std::vector<unsigned char> done(static_cast<std::size_t>(parts), 1);
        nt = static_cast<int>(std::min<std::int64_t>(nt, parts));
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (std::int64_t pt = 0; pt < parts; ++pt) {
            ConvGeometry gp = g;
            const std::int64_t n0 = g.N * pt / parts;
            gp.N = g.N * (pt + 1) / parts - n0;
            done[static_cast<std::size_t>(pt)] =
                weight_grad_team(gp, R, xs.at(x, n0 * G), us.at(u, n0 * G), dwt.data() + pt * dsize, 1);
        }
        if (std::find(done.begin(), done.end(), 0) != done.end()) return false;
        T* d0 = dwt.data();
        for (std::int64_t pt = 1; pt < parts; ++pt) {
            const T* dp = dwt.data() + pt * dsize;
            for (std::int64_t e = 0; e < dsize; ++e) d0[e] += dp[e];
        }
    }
    // [g][k][i][o < cp] added into W's order [g][o][i][k]: per (group, reduction channel) its
    // [Kn][Cd] block transposed into a buffer, whose rows are added to W's. (Element by
    // element, each read block·sizeof(T) bytes past the last: 17% of vol3d_k4s2's weight
    // gradient, 8 KiB apart.)
    Buffer<T> tw(nt * R.Cd * R.Kn);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t gc = 0; gc < G * R.Cr; ++gc) {
        const std::int64_t gi = gc / R.Cr, i = gc % R.Cr;
        T* const t = tw.data() + omp_get_thread_num() * R.Cd * R.Kn;
        vec::transpose(dwt.data() + gi * R.Kn * block + i * R.cp, block, R.Kn, R.Cd, t, R.Kn);
        for (std::int64_t o = 0; o < R.Cd; ++o) {
            T* d = dw + ((gi * R.Cd + o) * R.Cr + i) * R.Kn;
            const T* s = t + o * R.Kn;
            for (std::int64_t kt = 0; kt < R.Kn; ++kt) d[kt] += s[kt];
        }
    }
    return true;
}

template void rows_forward<float>(const ConvGeometry&, const float*, const float*, float*, int);
template void rows_forward<double>(const ConvGeometry&, const double*, const double*, double*, int);
template bool rows_transposed<float>(const ConvGeometry&, const float*, const float*, float*, int);
template bool rows_transposed<double>(const ConvGeometry&, const double*, const double*, double*, int);
template bool rows_weight_grad<float>(const ConvGeometry&, const float*, const float*, float*, int);
template bool rows_weight_grad<double>(const ConvGeometry&, const double*, const double*, double*, int);

}  // namespace tg
