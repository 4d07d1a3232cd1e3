// f16/bf16 convolutions: the kernels run in f32 on pieces converted in and out through
// workspace buffers of about the column budget, so no image-indexed tensor is ever copied
// whole to f32. A piece is a chunk of whole images, or, when one image alone exceeds the
// budget, a band of rows of spatial axis 0 of one image (a 1-D signal with a 1 GiB result
// is cut into bands). The weight (or the weight gradient, accumulated over the pieces in
// f32) is small and converted once. Every output element is still rounded once.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "bias.hpp"
#include "conv_exec.hpp"
#include "tapegrad/core/convert.hpp"
#include "tapegrad/core/workspace.hpp"

namespace tg::detail {

namespace {

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

}  // namespace

Tensor conv_16bit(ConvKind kind, const Tensor& a, const Tensor& b, const Tensor& bias, const ConvGeometry& g,
                  const Shape& out_shape) {
    const DType dt = a.dtype();
    const Tensor A = a.contiguous(), B = b.contiguous(), bc = bias.defined() ? bias.to(DType::f32).contiguous() : Tensor();
    Tensor out = Tensor::empty(out_shape, dt);
    const AxisRows i_rows(g.layout, g.G * g.Ig, g.in_size), o_rows(g.layout, g.G * g.Og, g.out_size);
    // The image-indexed operands' rows (nullptr for the weight): a is x or u, b is u or the
    // weight, the result is u, x or the weight gradient.
    const AxisRows* ra = kind == ConvKind::Transposed ? &o_rows : &i_rows;
    const AxisRows* rb = kind == ConvKind::WeightGrad ? &o_rows : nullptr;
    const AxisRows* ro = kind == ConvKind::Forward ? &o_rows : kind == ConvKind::Transposed ? &i_rows : nullptr;
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
    const std::int64_t budget = std::max<std::int64_t>(1, workspace_budget() / 4);  // f32 elements
    const std::int64_t per_image = std::max<std::int64_t>(1, (ra ? ra->image() : 0) + (rb ? rb->image() : 0) + (ro ? ro->image() : 0));
    if (per_image <= budget || g.N == 0) {
        const std::int64_t nb = std::clamp<std::int64_t>(budget / per_image, 1, std::max<std::int64_t>(g.N, 1));
        for (std::int64_t n0 = 0; n0 < g.N; n0 += nb)
            pieces.push_back({n0, std::min(nb, g.N - n0), {0, g.in_size[0], 0, g.out_size[0]}});
    } else {  // bands of the result's rows (the o-side rows for the weight gradient)
        const bool by_i = kind == ConvKind::Transposed;
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
        const ConvPlan plan = plan_call(kind, gc, DType::f32);
        if (ro && (padding_only || !plan.writes_all)) std::fill_n(bo.data(), n_out, 0.f);
        if (!padding_only) {
            load(ra, A, ba.data(), p);
            if (rb) load(rb, B, bb.data(), p);
            run_conv<float>(plan, gc, ba.data(), bb.data(), bo.data());
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


}  // namespace tg::detail
