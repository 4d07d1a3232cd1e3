// The conv family on the tape, over the shared configuration table (tests/conv_table.hpp):
// f64 gradcheck of CONV, CONVT and CONV_BW in both arguments, the adjoint identity in each
// linear argument, gradgradcheck on the transposed / grouped / dilated / strided / 3-D rows,
// and the spec ops (both opsets) through spec_op, checked by gradcheck and OPS.md Example 1.
//
// Finite differences cost two convolutions per element, so gradcheck looks at a seeded
// random subset of kMaxElements elements per input (gradgradcheck: kMaxElements2); the
// adjoint identity covers every element at the cost of one backward.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "tapegrad/autograd/conv.hpp"
#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tensor_helpers.hpp"
#include "conv_table.hpp"
#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_kernels.hpp"
#include "tapegrad/ops/conv_reference.hpp"
#include "tapegrad/ops/math.hpp"
#include "tapegrad/spec/opset.hpp"

using namespace tg;
using namespace tg::ag;
using tg::testing::ConvConfig;
using tg::testing::WorkspaceGuard;

namespace {

constexpr std::int64_t kMaxElements = 48;
constexpr std::int64_t kMaxElements2 = 12;

Tensor random_tensor(const Shape& s, std::uint64_t seed, DType dt = DType::f64) {
    std::mt19937_64 rng(seed);
    return testing::random_tensor(s, rng, dt);
}


// The shapes here are tiny and the checks run thousands of kernels: one thread avoids
// paying OpenMP start-up per call (10x faster on a busy 2-core machine).
struct OneThread {
    int prev;
    OneThread() : prev(num_threads()) { set_num_threads(1); }
    ~OneThread() { set_num_threads(prev); }
};

enum class Which { Conv, ConvT, ConvBW };

struct ConvCase {
    const char* name;
    ConvGeometry g;
    Function f;
    std::vector<Tensor> inputs;
    std::vector<std::string> names;
};

ConvCase make_case(Which w, const ConvConfig& c, Layout layout, std::uint64_t seed) {
    switch (w) {
        case Which::Conv: {
            const ConvGeometry g = tg::testing::forward_geometry(c, layout);
            return {"conv", g, [g](const std::vector<Variable>& v) { return conv(v[0], v[1], g); },
                    {random_tensor(g.in_shape(), seed), random_tensor(g.weight_shape(), seed + 1)}, {"x", "W"}};
        }
        case Which::ConvT: {
            const ConvGeometry g = tg::testing::transposed_geometry(c, layout);
            return {"conv_transpose", g, [g](const std::vector<Variable>& v) { return conv_transpose(v[0], v[1], g); },
                    {random_tensor(g.out_shape(), seed), random_tensor(g.weight_shape(), seed + 1)}, {"u", "W"}};
        }
        case Which::ConvBW: {
            const ConvGeometry g = tg::testing::forward_geometry(c, layout);
            return {"conv_weight_grad", g,
                    [g](const std::vector<Variable>& v) { return conv_weight_grad(v[0], v[1], g); },
                    {random_tensor(g.in_shape(), seed), random_tensor(g.out_shape(), seed + 1)}, {"x", "u"}};
        }
    }
    throw std::logic_error("unreachable");
}

void require_ok(const CheckReport& r, const std::string& what) {
    INFO(what << "\n" << r.table());
    CHECK(r.ok);
}

}  // namespace

TEST_CASE("conv family: gradcheck and adjoint identity over the conv table", "[autograd][gradcheck]") {
    OneThread one_thread;
    const auto& table = tg::testing::conv_table();
    for (std::size_t row = 0; row < table.size(); ++row) {
        const ConvConfig& c = table[row];
        const WorkspaceGuard budget(c.budget);
        const Layout layout = row % 3 == 2 ? Layout::NXC : Layout::NCX;
        for (Which w : {Which::Conv, Which::ConvT, Which::ConvBW}) {
            const ConvCase k = make_case(w, c, layout, 100 + row);
            const std::string what = c.name + std::string(" / ") + k.name + (layout == Layout::NXC ? " NXC" : " NCX");
            CheckOptions opt;
            opt.max_elements = kMaxElements;
            opt.seed = row;
            opt.names = k.names;
            require_ok(gradcheck(k.f, k.inputs, opt), what);
            // bilinear: linear in each argument with the other fixed
            require_ok(check_adjoint(k.f, k.inputs, 0, opt), what);
            require_ok(check_adjoint(k.f, k.inputs, 1, opt), what);
        }
    }
}

TEST_CASE("conv family: the differentiable ops compute the direct-loop reference", "[autograd]") {
    OneThread one_thread;
    const auto& table = tg::testing::conv_table();
    for (std::size_t row = 0; row < table.size(); row += 4) {
        const ConvConfig& c = table[row];
        const ConvGeometry gf = tg::testing::forward_geometry(c), gt = tg::testing::transposed_geometry(c);
        const Tensor x = random_tensor(gf.in_shape(), row), W = random_tensor(gf.weight_shape(), row + 1);
        const Tensor u = random_tensor(gf.out_shape(), row + 2), ut = random_tensor(gt.out_shape(), row + 3);
        auto close = [](const Tensor& a, const Tensor& b) {
            const auto va = a.values(), vb = b.values();
            REQUIRE(va.size() == vb.size());
            for (std::size_t i = 0; i < va.size(); ++i) REQUIRE(va[i] == Approx(vb[i]).margin(1e-12));
        };
        INFO(c.name);
        close(conv(constant(x), param(W), gf).value(), reference::conv_forward(x, W, gf));
        close(conv_transpose(constant(ut), param(W), gt).value(), reference::conv_transposed(ut, W, gt));
        close(conv_weight_grad(param(x), constant(u), gf).value(), reference::conv_weight_grad(x, u, gf));
    }
}

TEST_CASE("conv family: gradgradcheck on transposed, grouped, dilated, strided and 3-D rows", "[autograd][gradcheck]") {
    OneThread one_thread;
    const std::vector<std::string> rows = {"1d stride2 asym pads op1", "1d groups2 batch3", "2d dil3 stride2",
                                           "2d groups2",               "2d depthwise stride2", "2d op past pe",
                                           "3d stride2 pad dil",       "3d groups2"};
    int done = 0;
    for (const ConvConfig& c : tg::testing::conv_table()) {
        if (std::find(rows.begin(), rows.end(), c.name) == rows.end()) continue;
        ++done;
        for (Which w : {Which::Conv, Which::ConvT, Which::ConvBW}) {
            const Layout layout = done % 2 ? Layout::NCX : Layout::NXC;
            const ConvCase k = make_case(w, c, layout, 300 + static_cast<std::uint64_t>(done));
            CheckOptions opt;
            opt.max_elements = kMaxElements2;
            opt.seed = static_cast<std::uint64_t>(done);
            opt.names = k.names;
            require_ok(gradgradcheck(k.f, k.inputs, opt), c.name + std::string(" / ") + k.name);
        }
    }
    CHECK(done == static_cast<int>(rows.size()));
}

namespace {

struct SpecCase {
    std::string opset, op;
    Attrs attrs;
    std::vector<Shape> shapes;  // float inputs (data, filter, bias)
    std::vector<Tensor> extra;  // integer inputs appended after them (output_shape)
};

std::vector<SpecCase> spec_cases() {
    using V = std::vector<std::int64_t>;
    return {
        {"openvino", "Convolution",
         {{"strides", V{2, 1}}, {"pads_begin", V{1, 0}}, {"pads_end", V{0, 1}}, {"dilations", V{1, 2}}},
         {{2, 4, 5, 5}, {3, 4, 3, 3}}, {}},
        {"openvino", "GroupConvolution", {{"strides", V{2}}, {"pads_begin", V{1}}, {"pads_end", V{1}}},
         {{1, 4, 6}, {2, 3, 2, 3}}, {}},
        {"openvino", "ConvolutionBackpropData",
         {{"strides", V{2, 2}}, {"pads_begin", V{1, 1}}, {"pads_end", V{1, 1}}, {"output_padding", V{1, 0}}},
         {{1, 3, 4, 4}, {3, 2, 3, 3}}, {}},
        {"openvino", "GroupConvolutionBackpropData", {{"strides", V{2}}, {"auto_pad", std::string("same_upper")}},
         {{2, 4, 5}, {2, 2, 3, 3}}, {Tensor::from({1}, {9}, DType::i64)}},
        {"onednn", "Convolution",
         {{"groups", std::int64_t{2}}, {"pads_begin", V{1, 1}}, {"pads_end", V{0, 1}}},
         {{1, 5, 5, 4}, {3, 3, 2, 6}, {6}}, {}},
        {"onednn", "ConvTranspose",
         {{"groups", std::int64_t{2}}, {"strides", V{2, 2}}, {"data_format", std::string("NCX")},
          {"weights_format", std::string("IOX")}},
         {{1, 4, 3, 3}, {4, 3, 2, 2}, {6}}, {}},
        {"onednn", "ConvolutionBackpropData",
         {{"strides", V{2, 2}}, {"pads_begin", V{1, 1}}, {"pads_end", V{1, 1}}, {"data_format", std::string("NCX")},
          {"filter_format", std::string("OIX")}, {"output_shape", V{1, 2, 5, 5}}},
         {{1, 4, 3, 3}, {4, 2, 3, 3}}, {}},
        {"onednn", "ConvTransposeBackpropData", {{"groups", std::int64_t{2}}, {"data_format", std::string("NCX")},
                                                 {"filter_format", std::string("OIX")}, {"strides", V{2, 1}}},
         {{1, 4, 5, 5}, {2, 6, 3, 3}}, {}},
        {"onednn", "ConvTransposeBackwardData", {{"groups", std::int64_t{2}}, {"dilations", V{2, 1}}},
         {{1, 5, 5, 4}, {3, 3, 2, 6}}, {}},
    };
}

}  // namespace

TEST_CASE("spec ops on the tape: gradcheck and the adjoint identity", "[autograd][gradcheck]") {
    OneThread one_thread;
    std::uint64_t seed = 900;
    for (const SpecCase& sc : spec_cases()) {
        INFO(sc.opset << " " << sc.op);
        std::vector<Tensor> in;
        for (const Shape& s : sc.shapes) in.push_back(random_tensor(s, ++seed));
        for (const Tensor& t : sc.extra) in.push_back(t);
        const ResolvedOp r = resolve_op(sc.opset, sc.op, sc.attrs, in);

        const Function f = [&r](const std::vector<Variable>& v) { return spec_op(r, v); };
        CheckOptions opt;
        opt.max_elements = 24;
        opt.seed = seed;
        require_ok(gradcheck(f, in, opt), sc.op);
        // with a zero bias the op is linear in data and in filter
        std::vector<Tensor> lin = in;
        if (r.has_bias) lin[static_cast<std::size_t>(r.bias_input)] = Tensor::zeros(in[static_cast<std::size_t>(r.bias_input)].shape(), DType::f64);
        require_ok(check_adjoint(f, lin, r.data_input, opt), sc.op + " data");
        require_ok(check_adjoint(f, lin, r.filter_input, opt), sc.op + " filter");
    }
}

TEST_CASE("spec_op gradients reproduce OPS.md Example 1 and its double backward is finite-difference exact",
          "[autograd][gradcheck]") {
    OneThread one_thread;
    using V = std::vector<std::int64_t>;
    const Attrs attrs{{"strides", V{2}}, {"pads_begin", V{1}}, {"pads_end", V{1}}, {"output_padding", V{0}}};
    const Tensor data = Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64), filter = Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64);
    const ResolvedOp r = resolve_op("openvino", "ConvolutionBackpropData", attrs, {data, filter});
    Variable d = param(data), f = param(filter);
    const Variable y = spec_op(r, {d, f});
    CHECK(y.value().values() == std::vector<double>{2, 5, 4, 9, 6});
    y.backward(Tensor::from({1, 1, 5}, {1, 0, 0, 0, 1}, DType::f64));
    CHECK(d.grad().values() == std::vector<double>{2, 0, 2});
    CHECK(f.grad().values() == std::vector<double>{0, 4, 0});

    const Function fn = [&r](const std::vector<Variable>& v) { return spec_op(r, v); };
    CheckOptions opt;
    opt.names = {"data", "filter"};
    require_ok(gradgradcheck(fn, {data, filter}, opt), "Example 1");
}

TEST_CASE("conv family: f32, f16 and bf16 agree with f64 within the epsilon-scaled tolerance", "[autograd][gradcheck]") {
    OneThread one_thread;
    const auto& table = tg::testing::conv_table();
    for (std::size_t row : {1u, 5u, 11u, 21u}) {
        const ConvConfig& c = table[row];
        for (Which w : {Which::Conv, Which::ConvT, Which::ConvBW}) {
            const ConvCase k = make_case(w, c, Layout::NCX, 500 + row);
            const ConvGeometry& g = k.g;
            // the longest sum behind one element: CONV I_g·∏K, CONVT O_g·∏K, CONV_BW N·∏Y
            const std::int64_t n = std::max({g.Ig * g.kernel_numel(), g.Og * g.kernel_numel(), g.N * g.out_numel()});
            for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
                CheckOptions opt;
                opt.names = k.names;
                require_ok(check_precision(k.f, k.inputs, dt, n, opt),
                           c.name + std::string(" / ") + k.name + " " + dtype_name(dt));
            }
        }
    }
}

using tg::testing::same_bits;

TEST_CASE("conv family: a fused ReLU gives relu after the op bit for bit, forward and backward", "[autograd]") {
    OneThread one_thread;
    const auto& table = tg::testing::conv_table();
    for (std::size_t row = 0; row < table.size(); row += 2) {
        const ConvConfig& c = table[row];
        const WorkspaceGuard budget(c.budget);
        const Layout layout = row % 4 == 2 ? Layout::NXC : Layout::NCX;
        for (const bool transposed : {false, true})
            for (const DType dt : {DType::f32, DType::f64, DType::bf16})
                for (const bool with_bias : {true, false}) {
                    const ConvGeometry g = transposed ? tg::testing::transposed_geometry(c, layout) : tg::testing::forward_geometry(c, layout);
                    const Shape in = transposed ? g.out_shape() : g.in_shape(), out = transposed ? g.in_shape() : g.out_shape();
                    const std::int64_t C = transposed ? g.G * g.Ig : g.G * g.Og;
                    const std::uint64_t seed = 1000 + row * 16 + transposed * 8 + static_cast<std::uint64_t>(dt) * 2 + with_bias;
                    const Variable x = param(random_tensor(in, seed, dt)), W = param(random_tensor(g.weight_shape(), seed + 1, dt));
                    const Variable b = with_bias ? param(random_tensor({C}, seed + 2, dt)) : Variable();
                    auto op = [&](bool relu) { return transposed ? conv_transpose(x, W, g, b, relu) : conv(x, W, g, b, relu); };
                    INFO(c.name << (transposed ? " transposed " : " forward ") << dtype_name(dt) << (with_bias ? " bias" : "")
                                << (layout == Layout::NXC ? " NXC" : " NCX"));
                    const Variable fused = op(true), apart = relu(op(false));
                    REQUIRE(same_bits(fused.value(), apart.value()));
                    // A ReLU that does something: some results are cut to 0, some pass.
                    if (dt != DType::bf16 && shape_numel(out) >= 8) {
                        const std::vector<double> v = fused.value().values();
                        CHECK(std::count(v.begin(), v.end(), 0.0) > 0);
                        CHECK(std::count_if(v.begin(), v.end(), [](double e) { return e > 0; }) > 0);
                    }
                    const Variable r = constant(random_tensor(out, seed + 3, dt));
                    std::vector<Variable> wrt{x, W};
                    if (with_bias) wrt.push_back(b);
                    const std::vector<Variable> gf = grad({sum(mul(fused, r))}, wrt), ga = grad({sum(mul(apart, r))}, wrt);
                    for (std::size_t i = 0; i < wrt.size(); ++i) {
                        INFO("gradient " << i);
                        REQUIRE(same_bits(gf[i].value(), ga[i].value()));
                    }
                }
    }
}

TEST_CASE("conv family: a fused ReLU passes NaN and gradcheck", "[autograd][gradcheck]") {
    OneThread one_thread;
    const auto& table = tg::testing::conv_table();
    for (std::size_t row = 1; row < table.size(); row += 5) {
        const ConvConfig& c = table[row];
        const WorkspaceGuard budget(c.budget);
        const ConvGeometry gf = tg::testing::forward_geometry(c), gt = tg::testing::transposed_geometry(c);
        const Tensor bf = random_tensor({gf.G * gf.Og}, row + 7), bt = random_tensor({gt.G * gt.Ig}, row + 8);
        const ConvCase k[2] = {
            {"conv relu", gf, [gf, bf](const std::vector<Variable>& v) { return conv(v[0], v[1], gf, constant(bf), true); },
             {random_tensor(gf.in_shape(), row), random_tensor(gf.weight_shape(), row + 1)}, {"x", "W"}},
            {"conv_transpose relu", gt,
             [gt, bt](const std::vector<Variable>& v) { return conv_transpose(v[0], v[1], gt, constant(bt), true); },
             {random_tensor(gt.out_shape(), row + 2), random_tensor(gt.weight_shape(), row + 3)}, {"u", "W"}}};
        for (const ConvCase& kc : k) {
            CheckOptions opt;
            opt.max_elements = kMaxElements;
            opt.seed = row;
            opt.names = kc.names;
            require_ok(gradcheck(kc.f, kc.inputs, opt), c.name + std::string(" / ") + kc.name);
        }
        // NaNs in the data (image 0's first channel) reach the results that read them, through the ReLU.
        Tensor x = random_tensor(gf.in_shape(), row + 4);
        std::fill_n(x.data<double>(), shape_numel(gf.in_shape()) / (gf.N * gf.G * gf.Ig), std::numeric_limits<double>::quiet_NaN());
        const Tensor y = conv(constant(x), constant(random_tensor(gf.weight_shape(), row + 5)), gf, constant(bf), true).value();
        const Tensor y_apart = tg::relu(tg::conv_forward(x, random_tensor(gf.weight_shape(), row + 5), gf, bf));
        CHECK(same_bits(y, y_apart));
        const std::vector<double> v = y.values();
        CHECK(std::any_of(v.begin(), v.end(), [](double e) { return std::isnan(e); }));
    }
}
