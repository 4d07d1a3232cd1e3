// f16 and bf16 through the oneDNN ops (and the OpenVINO ones where cheap): 16-bit storage,
// f32 accumulation, one round-to-nearest-even per stored result (docs/lowp.md).
//
// Checked here, per op, layout, weight format and dtype:
//  * bit-identity: a 16-bit run equals the f32 computation on the same (16-bit) inputs,
//    rounded once, for the result, bias included, and for every gradient;
//  * accuracy: |y16 - y64| <= eps16·|y| + n·eps32·Σ|products| against the f64 result of the
//    same rounded inputs;
//  * the adjoint identities between the ops, in NCX and NXC, in f64, f32, f16 and bf16.
#include <catch2/catch.hpp>

#include <cstring>

#include "tapegrad/ops/conv_reference.hpp"
#include "onednn_helpers.hpp"

using namespace tg;
using namespace tg::onednn_test;
using testing::same_bits;

namespace {

using V = std::vector<double>;

// One small 2-D case per op: strides, dilation, asymmetric pads, groups 2, 4 channels per
// group on the i-side and 3 on the o-side, so sums have 4·6 = 24 or 3·6 = 18 products.
struct LowpCase {
    ResolvedOp r;
    std::vector<Tensor> in;  // f64 values exactly representable in dt
    Tensor dy;
};

Attrs lowp_attrs(const OneDnnOp& o, Layout l, int f) {
    Attrs a{{"strides", IntList{2, 1}}, {"dilations", IntList{1, 2}}, {"pads_begin", IntList{1, 1}},
            {"pads_end", IntList{0, 1}}, {"groups", std::int64_t{2}},   {"data_format", std::string(layout_name(l))},
            {o.format_attr, o.formats[f]}};
    return a;
}

LowpCase make_case(const OneDnnOp& o, Layout l, int f, DType dt, std::mt19937_64& rng, bool bias = true) {
    const std::int64_t G = 2, Ig = 4, Og = 3;
    // i-side spatial (9, 7); o-side (Rule F with pads (1, 0) and (1, 1)):
    // floor((9 + 1 - 3)/2) + 1 = 4 and floor((7 + 2 - 3)/1) + 1 = 7.
    const Shape xi{9, 7}, xo{4, 7};
    Shape xs{3, (o.transposed ? Og : Ig) * G};
    const Shape& sp = o.transposed ? xo : xi;
    xs.insert(xs.end(), sp.begin(), sp.end());
    LowpCase c;
    c.in = {to_layout(random_tensor(xs, rng, dt).to(DType::f64), l),
            store_filter(random_tensor({G * Og, Ig, 3, 2}, rng, dt).to(DType::f64), o.layouts[f])};
    if (o.needs_output_shape) c.in.push_back(shape_input(xi));
    if (o.has_bias && bias) c.in.push_back(random_tensor({(o.transposed ? Ig : Og) * G}, rng, dt).to(DType::f64));
    c.r = resolve_op("onednn", o.name, lowp_attrs(o, l, f), c.in);
    c.dy = random_tensor(c.r.result_shape, rng, dt).to(DType::f64);
    return c;
}

std::vector<Tensor> converted(const std::vector<Tensor>& in, DType dt) {
    std::vector<Tensor> out;
    for (const Tensor& t : in) out.push_back(is_float(t.dtype()) ? t.to(dt) : t);
    return out;
}

std::size_t count_different(const Tensor& a, const Tensor& b) {
    const V x = a.values(), y = b.values();
    std::size_t n = 0;
    for (std::size_t i = 0; i < x.size(); ++i) n += x[i] != y[i];
    return n;
}

}  // namespace

TEST_CASE("a 16-bit run is the f32 computation on the same inputs, rounded once (result, bias, gradients)",
          "[onednn][lowp]") {
    std::mt19937_64 rng(16);
    for (DType dt : {DType::f16, DType::bf16})
        for (const OneDnnOp& o : onednn_ops())
            for (Layout l : {Layout::NCX, Layout::NXC})
                for (int f = 0; f < 2; ++f) {
                    INFO(dtype_name(dt) << " " << o.name << " " << layout_name(l) << " " << o.formats[f]);
                    const LowpCase c = make_case(o, l, f, dt, rng);
                    const std::vector<Tensor> in16 = converted(c.in, dt), in32 = converted(c.in, DType::f32);
                    const Tensor y16 = run_op(c.r, in16);
                    CHECK(y16.dtype() == dt);
                    CHECK(same_bits(y16, run_op(c.r, in32).to(dt)));
                    const std::vector<Tensor> g16 = run_op_with_grads(c.r, in16, c.dy.to(dt)).grads;
                    const std::vector<Tensor> g32 = run_op_with_grads(c.r, in32, c.dy.to(DType::f32)).grads;
                    for (std::size_t k = 0; k < g16.size(); ++k) {
                        INFO("gradient " << k);
                        if (!g16[k].defined()) continue;
                        CHECK(g16[k].dtype() == dt);
                        CHECK(same_bits(g16[k], g32[k].to(dt)));
                    }
                }
}

TEST_CASE("a conv with bias rounds once: the bias joins the f32 sum before the 16-bit rounding", "[onednn][lowp]") {
    std::mt19937_64 rng(17);
    for (DType dt : {DType::f16, DType::bf16})
        for (const std::string name : {"Convolution", "ConvTranspose"})
            for (Layout l : {Layout::NCX, Layout::NXC}) {
                INFO(dtype_name(dt) << " " << name << " " << layout_name(l));
                const OneDnnOp& o = onednn_op(name);
                const LowpCase c = make_case(o, l, 1, dt, rng);
                REQUIRE(c.in.size() == 3);
                const Tensor b = c.in[2];
                // f32 convolution without the bias, then the bias in f32, then one rounding.
                const ResolvedOp nob = resolve_op("onednn", name, lowp_attrs(o, l, 1), {c.in[0], c.in[1]});
                const Tensor y32 = run_op(nob, {c.in[0].to(DType::f32), c.in[1].to(DType::f32)});
                const V yv = y32.values(), bv = b.values();
                const std::int64_t C = static_cast<std::int64_t>(bv.size());
                const std::int64_t positions = y32.numel() / (y32.shape()[0] * C);  // per image and channel
                V once(yv.size()), twice(yv.size());
                for (std::int64_t i = 0; i < static_cast<std::int64_t>(yv.size()); ++i) {
                    const std::int64_t ch = l == Layout::NXC ? i % C : (i / positions) % C;
                    const float s = static_cast<float>(yv[i]) + static_cast<float>(bv[ch]);
                    once[i] = s;
                    // What two roundings would give: the conv result rounded, then the sum.
                    const double r1 = Tensor::from({1}, {yv[i]}, DType::f32).to(dt).values()[0];
                    twice[i] = static_cast<float>(r1) + static_cast<float>(bv[ch]);
                }
                const Tensor want = Tensor::from(y32.shape(), once, DType::f32).to(dt);
                const Tensor twice16 = Tensor::from(y32.shape(), twice, DType::f32).to(dt);
                // The check can fail: on these data the two policies differ somewhere.
                REQUIRE(count_different(want, twice16) > 0);
                const Tensor got = run_op(c.r, converted(c.in, dt));
                INFO(count_different(got, want) << " of " << got.numel() << " elements differ from one rounding, "
                                                << count_different(got, twice16) << " from two");
                CHECK(same_bits(got, want));
            }
}

TEST_CASE("f16 and bf16 oneDNN ops match f64 within epsilon-scaled tolerances", "[onednn][lowp]") {
    std::mt19937_64 rng(18);
    std::size_t total = 0, not_nearest = 0;
    for (DType dt : {DType::f16, DType::bf16})
        for (const OneDnnOp& o : onednn_ops())
            for (Layout l : {Layout::NCX, Layout::NXC})
                for (int f = 0; f < 2; ++f) {
                    INFO(dtype_name(dt) << " " << o.name << " " << layout_name(l) << " " << o.formats[f]);
                    const LowpCase c = make_case(o, l, f, dt, rng);
                    const Tensor y64 = run_op(c.r, c.in);
                    const Tensor y16 = run_op(c.r, converted(c.in, dt));
                    // Σ|products| per element: the same op on |inputs| (the bias is one product).
                    std::vector<Tensor> abs_in;
                    for (const Tensor& t : c.in) abs_in.push_back(is_float(t.dtype()) ? abs_tensor(t) : t);
                    const V s = run_op(c.r, abs_in).values(), a = y16.values(), b = y64.values();
                    const double n = 24 + 2, e16 = dtype_epsilon(dt), e32 = dtype_epsilon(DType::f32);
                    std::size_t bad = 0;
                    for (std::size_t i = 0; i < a.size(); ++i) {
                        // One rounding (half an ulp, plus the f16 subnormal spacing 2^-24) after
                        // an f32 sum of n terms.
                        const double tol = 0.5 * e16 * std::fabs(b[i]) + n * e32 * s[i] + 0x1p-24;
                        bad += !(std::fabs(a[i] - b[i]) <= tol);
                    }
                    CHECK(bad == 0);
                    // The looser bound must not hide anything: 4 ulps of error would fail it.
                    std::size_t bad4 = 0;
                    for (std::size_t i = 0; i < a.size(); ++i)
                        bad4 += !(std::fabs(a[i] + 4 * e16 * std::fabs(b[i]) - b[i]) <=
                                  0.5 * e16 * std::fabs(b[i]) + n * e32 * s[i] + 0x1p-24);
                    CHECK(bad4 > a.size() / 2);
                    // How often f32 accumulation changes the correctly rounded f64 result.
                    not_nearest += count_different(y16, y64.to(dt));
                    total += a.size();
                }
    INFO(not_nearest << " of " << total << " 16-bit results differ from the correctly rounded f64 result");
    CHECK(not_nearest * 100 < total);
}

TEST_CASE("adjoint identities between the oneDNN ops, NCX and NXC, every float dtype", "[onednn][lowp]") {
    // <Convolution(x, W), u> = <x, ConvolutionBackpropData(u, W)>
    // <ConvTranspose(x, W), u> = <x, ConvTransposeBackwardData(u, W)>
    // <ConvTranspose(x, swap(W_old)), u> = <x, ConvTransposeBackpropData(u, W_old)>
    struct Pair {
        std::string fwd, adj;
        int fwd_format, adj_format;
    };
    const std::vector<Pair> pairs{{"Convolution", "ConvolutionBackpropData", 0, 0},
                                  {"Convolution", "ConvolutionBackpropData", 1, 1},
                                  {"ConvTranspose", "ConvTransposeBackwardData", 0, 0},
                                  {"ConvTranspose", "ConvTransposeBackwardData", 1, 1},
                                  {"ConvTranspose", "ConvTransposeBackpropData", 0, 0},
                                  {"ConvTranspose", "ConvTransposeBackpropData", 1, 1}};
    std::mt19937_64 rng(19);
    for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16})
        for (const Pair& p : pairs)
            for (Layout l : {Layout::NCX, Layout::NXC}) {
                INFO(dtype_name(dt) << " " << p.fwd << "/" << p.adj << " " << layout_name(l) << " format " << p.fwd_format);
                const OneDnnOp& fo = onednn_op(p.fwd);
                const OneDnnOp& ao = onednn_op(p.adj);
                const LowpCase c = make_case(fo, l, p.fwd_format, dt, rng, false);
                const Tensor& x = c.in[0];
                const Tensor& u = c.dy;
                // The adjoint op's filter: the same array, except that the old ConvTranspose
                // formats hold it with the two channel axes swapped.
                Tensor w = c.in[1];
                if (ao.layouts[p.adj_format] != fo.layouts[p.fwd_format])
                    w = store_filter(load_filter(w, fo.layouts[p.fwd_format]), ao.layouts[p.adj_format]);
                std::vector<Tensor> adj_in{u, w};
                if (ao.needs_output_shape) adj_in.push_back(shape_input(x.shape()));
                const Attrs aa = lowp_attrs(ao, l, p.adj_format);
                const ResolvedOp ar = resolve_op("onednn", p.adj, aa, adj_in);
                REQUIRE(ar.result_shape == x.shape());

                const double lhs = dot(run_op(c.r, converted(c.in, dt)), u.to(dt));
                const double rhs = dot(x.to(dt), run_op(ar, converted(adj_in, dt)));
                // Σ|x|·|W|·|u| over all products, the same for both bracketings.
                const double scale = dot(run_op(c.r, {abs_tensor(x), abs_tensor(c.in[1])}), abs_tensor(u));
                const double e = dt == DType::f64 ? 1e-14 : dtype_epsilon(dt) + 26 * dtype_epsilon(DType::f32);
                INFO("lhs " << lhs << ", rhs " << rhs << ", scale " << scale);
                CHECK(std::fabs(lhs - rhs) <= 2 * e * scale);
                CHECK(std::fabs(lhs) > 1e-4 * scale);  // not a vacuous 0 = 0
            }
}
