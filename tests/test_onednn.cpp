// The oneDNN Graph opset (OPS.md sections 3 to 6 and 11) through resolve_op / run_op /
// run_op_with_grads: attribute sets, defaults and format values, channel checks, output_shape,
// rules T-CT and T-CBD, every layout x weight format x groups combination against the
// direct-loop reference and the OpenVINO ops, the equivalences of section 6, and gradients
// against central differences. The tensors are permuted and re-laid by hand here
// (tests/onednn_helpers.hpp), never with the opset's own relayout code.
// (OPS.md Examples 1-5 in their printed form are in test_worked_examples.cpp.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <sstream>

#include "tapegrad/ops/conv_reference.hpp"
#include "conv_table.hpp"
#include "onednn_helpers.hpp"

using namespace tg;
using namespace tg::onednn_test;
using tg::testing::ConvConfig;
using tg::testing::conv_table;
using tg::testing::WorkspaceGuard;

namespace {

using V = std::vector<double>;

// f64 results computed in different orders agree to a few ulps of Σ|products|; indexing
// errors are O(1) with these inputs.
constexpr double kTol = 1e-12;

// bias[c] added to channel c of an NCX tensor.
Tensor add_channel_bias(const Tensor& ncx, const Tensor& bias) {
    std::vector<double> v = ncx.values();
    const V b = bias.values();
    const std::int64_t N = ncx.shape()[0], C = ncx.shape()[1], P = N == 0 ? 0 : ncx.numel() / (N * C);
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t p = 0; p < P; ++p) v[static_cast<std::size_t>((n * C + c) * P + p)] += b[c];
    return Tensor::from(ncx.shape(), v, DType::f64);
}

// Σ over n and positions of an NCX tensor, per channel.
Tensor channel_sums(const Tensor& ncx) {
    const V v = ncx.values();
    const std::int64_t N = ncx.shape()[0], C = ncx.shape()[1], P = N == 0 ? 0 : ncx.numel() / (N * C);
    V s(static_cast<std::size_t>(C), 0.0);
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t p = 0; p < P; ++p) s[c] += v[static_cast<std::size_t>((n * C + c) * P + p)];
    return Tensor::from({C}, s, DType::f64);
}

Shape spatial_of(const Shape& ncx) { return Shape(ncx.begin() + 2, ncx.end()); }

// The full shape of an NCX shape in layout l.
IntList shape_in_layout(const Shape& ncx, Layout l) {
    if (l == Layout::NCX) return ncx;
    IntList s{ncx[0]};
    s.insert(s.end(), ncx.begin() + 2, ncx.end());
    s.push_back(ncx[1]);
    return s;
}

std::string df(Layout l) { return layout_name(l); }

// Attributes of op `o` for a table row (explicit pads), layout l and weight format f.
Attrs row_attrs(const ConvConfig& c, const OneDnnOp& o, Layout l, int f) {
    IntList s, d, pb, pe, op;
    for (const auto& a : c.axes) {
        s.push_back(a.s);
        d.push_back(a.d);
        pb.push_back(a.pb);
        pe.push_back(a.pe);
        op.push_back(a.op);
    }
    Attrs attrs{{"strides", s}, {"dilations", d}, {"pads_begin", pb}, {"pads_end", pe}, {"groups", c.G},
                {"data_format", df(l)}, {o.format_attr, o.formats[f]}};
    // Passed to the ops whose result size ignores it too: it must then have no effect.
    if (o.has_output_padding) attrs["output_padding"] = op;
    return attrs;
}

Attrs ov_attrs(const ConvConfig& c, bool transposed) {
    IntList s, d, pb, pe, op;
    for (const auto& a : c.axes) {
        s.push_back(a.s);
        d.push_back(a.d);
        pb.push_back(a.pb);
        pe.push_back(a.pe);
        op.push_back(a.op);
    }
    Attrs attrs{{"strides", s}, {"dilations", d}, {"pads_begin", pb}, {"pads_end", pe}};
    if (transposed) attrs["output_padding"] = op;
    return attrs;
}

// Central differences of <run_op(r, in), dy> with respect to every element of in[k]. The ops
// are linear in each input, so the difference quotient is exact up to rounding.
Tensor numeric_grad(const ResolvedOp& r, std::vector<Tensor> in, const Tensor& dy, std::size_t k) {
    const Tensor orig = in[k];
    const V v = orig.values();
    V g(v.size());
    const double h = 0.5;
    for (std::size_t i = 0; i < v.size(); ++i) {
        V p = v;
        p[i] = v[i] + h;
        in[k] = Tensor::from(orig.shape(), p, DType::f64);
        const double fp = dot(run_op(r, in), dy);
        p[i] = v[i] - h;
        in[k] = Tensor::from(orig.shape(), p, DType::f64);
        const double fm = dot(run_op(r, in), dy);
        g[i] = (fp - fm) / (2 * h);
    }
    return Tensor::from(orig.shape(), g, DType::f64);
}

// The geometry on one spatial axis between an i-side of size `in` and an o-side of size
// `out`, kernel K, stride s, begin pad pb (the end pad is whatever the sizes imply).
ConvGeometry geom_1d(std::int64_t N, std::int64_t G, std::int64_t Ig, std::int64_t Og, std::int64_t K, std::int64_t in,
                     std::int64_t out, std::int64_t s = 1, std::int64_t pb = 0) {
    return ConvGeometry::transposed_to({.N = N, .C_in = G * Og, .C_out = G * Ig, .groups = G, .in_size = {out}, .kernel = {K},
                                        .stride = {s}, .pads_begin = {pb}},
                                       {in});
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Attribute sets, defaults, format values (OPS.md 3.2, 3.3, D4, D10)
// ---------------------------------------------------------------------------------------

namespace {

// A valid 1-D NXC case per op with its default formats; results are [1,3,4], [1,7,4], [1,5,2],
// [1,3,4] and [1,3,4].
struct BaseCase {
    std::vector<Tensor> inputs;
    Shape result;  // NXC
    bool transposed;
    std::int64_t Og, Ig;  // canonical channel counts (G = 1), K = 3
};

BaseCase base_case(const std::string& op) {
    std::mt19937_64 rng(11);
    if (op == "Convolution")  // src [1,5,2], XIO [K=3, I=2, O=4]
        return {{random_tensor({1, 5, 2}, rng), random_tensor({3, 2, 4}, rng)}, {1, 3, 4}, false, 4, 2};
    if (op == "ConvTranspose")  // src [1,5,2], XOI [K=3, OC=4, IC=2]
        return {{random_tensor({1, 5, 2}, rng), random_tensor({3, 4, 2}, rng)}, {1, 7, 4}, true, 2, 4};
    if (op == "ConvolutionBackpropData")  // dd [1,3,4], XIO [K=3, C_ds=2, C_dd=4], output_shape [1,5,2]
        return {{random_tensor({1, 3, 4}, rng), random_tensor({3, 2, 4}, rng), shape_input({1, 5, 2})}, {1, 5, 2}, true, 4, 2};
    if (op == "ConvTransposeBackpropData")  // dd [1,5,2], old XIO [K=3, IC=4, OC=2]
        return {{random_tensor({1, 5, 2}, rng), random_tensor({3, 4, 2}, rng)}, {1, 3, 4}, false, 4, 2};
    // ConvTransposeBackwardData: dd [1,5,2], XOI [K=3, OC=2, IC=4]
    return {{random_tensor({1, 5, 2}, rng), random_tensor({3, 2, 4}, rng)}, {1, 3, 4}, false, 4, 2};
}

const std::map<std::string, std::vector<std::string>>& spec_attr_sets() {
    // OPS.md 3.2, transcribed.
    static const std::map<std::string, std::vector<std::string>> m = {
        {"Convolution", {"strides", "pads_begin", "pads_end", "dilations", "auto_pad", "groups", "data_format", "weights_format"}},
        {"ConvTranspose",
         {"strides", "pads_begin", "pads_end", "dilations", "auto_pad", "output_padding", "groups", "data_format",
          "weights_format"}},
        {"ConvolutionBackpropData",
         {"strides", "pads_begin", "pads_end", "dilations", "auto_pad", "output_padding", "groups", "data_format",
          "filter_format", "output_shape"}},
        {"ConvTransposeBackpropData",
         {"strides", "pads_begin", "pads_end", "dilations", "auto_pad", "output_padding", "groups", "data_format",
          "filter_format"}},
        {"ConvTransposeBackwardData",
         {"strides", "pads_begin", "pads_end", "dilations", "auto_pad", "output_padding", "groups", "data_format",
          "weights_format"}},
    };
    return m;
}

}  // namespace

TEST_CASE("each oneDNN op accepts exactly the attributes of OPS.md 3.2", "[onednn]") {
    const std::vector<std::pair<std::string, AttrValue>> all{
        {"strides", IntList{1}},        {"pads_begin", IntList{0}},     {"pads_end", IntList{0}},
        {"dilations", IntList{1}},      {"auto_pad", std::string("explicit")},
        {"output_padding", IntList{0}}, {"groups", std::int64_t{1}},    {"data_format", std::string("NXC")},
        {"weights_format", std::string("default")},                     {"filter_format", std::string("XIO")},
        {"output_shape", IntList{1, 5, 2}},
        {"padding", IntList{0}},        {"dst_shape", IntList{1, 5, 2}}, {"kernel", IntList{3}}};
    for (const OneDnnOp& o : onednn_ops()) {
        const BaseCase b = base_case(o.name);
        const auto& allowed = spec_attr_sets().at(o.name);
        REQUIRE(error_key("onednn", o.name, {}, b.inputs) == "(no error)");
        for (auto [key, value] : all) {
            if (key == "weights_format") value = o.formats[1];  // the op's default
            const bool ok = std::find(allowed.begin(), allowed.end(), key) != allowed.end();
            INFO(o.name << " with attribute " << key);
            CHECK(error_key("onednn", o.name, {{key, value}}, b.inputs) == (ok ? "(no error)" : key));
        }
    }
    // OpenVINO-only ops are not in the onednn opset, nor the oneDNN v3 names (5.10).
    const BaseCase b = base_case("Convolution");
    CHECK(error_key("onednn", "GroupConvolution", {}, b.inputs) == "op");
    CHECK(error_key("onednn", "ConvolutionBackwardData", {}, b.inputs) == "op");
    CHECK(error_key("oneDNN", "Convolution", {}, b.inputs) == "opset");
}

TEST_CASE("oneDNN defaults: data_format NXC, Convolution XIO, ConvTranspose family XOI, filter_format XIO", "[onednn]") {
    for (const OneDnnOp& o : onednn_ops()) {
        INFO(o.name);
        const BaseCase b = base_case(o.name);
        // Omitted and explicit defaults give the same result, of the NXC shape.
        const Tensor y_default = run("onednn", o.name, {}, b.inputs);
        CHECK(y_default.shape() == b.result);
        const Tensor y_explicit =
            run("onednn", o.name, {{"data_format", std::string("nxc")}, {o.format_attr, o.formats[1]}}, b.inputs);
        CHECK(max_abs_diff(y_default, y_explicit) == 0);

        // ... and the values are the reference's for the default reading of the filter.
        const Tensor x = to_ncx(b.inputs[0], Layout::NXC);
        const Tensor cf = load_filter(b.inputs[1], o.layouts[1]);
        REQUIRE(cf.shape()[0] == b.Og);
        REQUIRE(cf.shape()[1] == b.Ig);
        const Tensor W = cf.reshape({1, b.Og, b.Ig, 3});
        const std::int64_t X = x.shape()[2];
        const std::int64_t Yres = b.result[1];
        const Tensor want = b.transposed ? reference::conv_transposed(x, W, geom_1d(1, 1, b.Ig, b.Og, 3, Yres, X))
                                         : reference::conv_forward(x, W, geom_1d(1, 1, b.Ig, b.Og, 3, X, Yres));
        CHECK(max_abs_diff(to_ncx(y_default, Layout::NXC), want) <= kTol);

        // Reading the same tensors as NCX or in the other format is not the same op.
        const std::string ncx = error_key("onednn", o.name, {{"data_format", std::string("NCX")}}, b.inputs);
        if (ncx == "(no error)")
            CHECK(run("onednn", o.name, {{"data_format", std::string("NCX")}}, b.inputs).shape() != b.result);
        const std::string other = error_key("onednn", o.name, {{o.format_attr, o.formats[0]}}, b.inputs);
        if (other == "(no error)")
            CHECK(run("onednn", o.name, {{o.format_attr, o.formats[0]}}, b.inputs).shape() != b.result);
    }
}

TEST_CASE("oneDNN format values: OIX/XIO for the conv ops, IOX/XOI for the ConvTranspose family (D4)", "[onednn]") {
    const std::vector<std::string> values{"OIX", "XIO", "IOX", "XOI", "oix", "xIo", "ioX", "xoi", "OXI", "NCX", "", "GOIX"};
    for (const OneDnnOp& o : onednn_ops()) {
        const BaseCase b = base_case(o.name);
        for (const std::string& v : values) {
            std::string up;
            for (char ch : v) up += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
            const bool valid = up == o.formats[0] || up == o.formats[1];
            INFO(o.name << " " << o.format_attr << " = '" << v << "'");
            const std::string key = error_key("onednn", o.name, {{o.format_attr, v}}, b.inputs);
            if (valid) CHECK(key != o.format_attr);
            else CHECK(key == o.format_attr);
        }
        for (const char* v : {"NCX", "NXC", "ncx", "Nxc", "NHWC", "NCHW", "XNC", ""}) {
            const std::string s = v;
            const bool valid = s == "NCX" || s == "NXC" || s == "ncx" || s == "Nxc";
            INFO(o.name << " data_format = '" << s << "'");
            const std::string key = error_key("onednn", o.name, {{"data_format", s}}, b.inputs);
            if (valid) CHECK(key != "data_format");
            else CHECK(key == "data_format");
        }
        // Wrong attribute types name the attribute (error 2).
        CHECK(error_key("onednn", o.name, {{o.format_attr, IntList{1}}}, b.inputs) == o.format_attr);
        CHECK(error_key("onednn", o.name, {{"data_format", std::int64_t{1}}}, b.inputs) == "data_format");
        CHECK(error_key("onednn", o.name, {{"groups", IntList{1}}}, b.inputs) == "groups");
        CHECK(error_key("onednn", o.name, {{"groups", std::int64_t{0}}}, b.inputs) == "groups");
        CHECK(error_key("onednn", o.name, {{"strides", IntList{1, 1}}}, b.inputs) == "strides");
        CHECK(error_key("onednn", o.name, {{"auto_pad", std::string("same")}}, b.inputs) == "auto_pad");
        // Ignored pads are still validated (OPS.md 3.3).
        CHECK(error_key("onednn", o.name, {{"auto_pad", std::string("valid")}, {"pads_end", IntList{-1}}}, b.inputs) ==
              "pads_end");
        if (o.has_output_padding)
            CHECK(error_key("onednn", o.name, {{"output_padding", IntList{-1}}}, b.inputs) == "output_padding");
    }
}

// ---------------------------------------------------------------------------------------
// Channel checks and inputs (OPS.md 5.5-5.9, D11)
// ---------------------------------------------------------------------------------------

TEST_CASE("oneDNN channel checks of section 5 use exact equality and name the input", "[onednn]") {
    std::mt19937_64 rng(3);
    const Attrs ncx_g2{{"data_format", std::string("NCX")}, {"groups", std::int64_t{2}}};
    auto key = [&](const std::string& op, const std::string& fmt_attr, const std::string& fmt, const Shape& data,
                   const Shape& filter) {
        Attrs a = ncx_g2;
        a[fmt_attr] = fmt;
        std::vector<Tensor> in{random_tensor(data, rng), random_tensor(filter, rng)};
        if (op == "ConvolutionBackpropData") a["output_shape"] = IntList{5};
        return error_key("onednn", op, a, in);
    };
    // Convolution: IC = g·weights_I (OIX [OC, IC/g, K]); OC % g = 0. C = 5, g = 2, I = 2 is
    // let through by the libraries' integer division but not here (D11).
    CHECK(key("Convolution", "weights_format", "OIX", {1, 4, 8}, {4, 2, 3}) == "(no error)");
    CHECK(key("Convolution", "weights_format", "OIX", {1, 5, 8}, {4, 2, 3}) == "weights");
    CHECK(key("Convolution", "weights_format", "OIX", {1, 4, 8}, {3, 2, 3}) == "groups");
    // ConvTranspose: IC = weights_I (IOX [IC, OC/g, K], IC in full); IC % g = 0.
    CHECK(key("ConvTranspose", "weights_format", "IOX", {1, 4, 8}, {4, 1, 3}) == "(no error)");
    CHECK(key("ConvTranspose", "weights_format", "IOX", {1, 4, 8}, {5, 1, 3}) == "weights");
    CHECK(key("ConvTranspose", "weights_format", "IOX", {1, 4, 8}, {2, 1, 3}) == "weights");
    CHECK(key("ConvTranspose", "weights_format", "IOX", {1, 3, 8}, {3, 1, 3}) == "groups");
    // ConvolutionBackpropData: C_dd = filter_O (OIX [C_dd, C_ds/g, K]); C_dd % g = 0.
    CHECK(key("ConvolutionBackpropData", "filter_format", "OIX", {1, 4, 3}, {4, 1, 3}) == "(no error)");
    CHECK(key("ConvolutionBackpropData", "filter_format", "OIX", {1, 4, 3}, {5, 1, 3}) == "filter");
    CHECK(key("ConvolutionBackpropData", "filter_format", "OIX", {1, 3, 3}, {3, 1, 3}) == "groups");
    // ConvTransposeBackpropData: C_dd = g·filter_O (old OIX [OC/g, IC, K]); IC % g = 0.
    CHECK(key("ConvTransposeBackpropData", "filter_format", "OIX", {1, 4, 8}, {2, 4, 3}) == "(no error)");
    CHECK(key("ConvTransposeBackpropData", "filter_format", "OIX", {1, 4, 8}, {4, 4, 3}) == "filter");
    CHECK(key("ConvTransposeBackpropData", "filter_format", "OIX", {1, 5, 8}, {2, 4, 3}) == "filter");
    CHECK(key("ConvTransposeBackpropData", "filter_format", "OIX", {1, 4, 8}, {2, 3, 3}) == "groups");
    // ConvTransposeBackwardData: C_dd = g·weights_O (IOX [IC, OC/g, K]); weights_I % g = 0.
    CHECK(key("ConvTransposeBackwardData", "weights_format", "IOX", {1, 4, 8}, {4, 2, 3}) == "(no error)");
    CHECK(key("ConvTransposeBackwardData", "weights_format", "IOX", {1, 4, 8}, {2, 4, 3}) == "weights");
    CHECK(key("ConvTransposeBackwardData", "weights_format", "IOX", {1, 4, 8}, {3, 2, 3}) == "groups");
    // The same checks in NXC/X-first formats read the channels from the last axes.
    Attrs nxc{{"groups", std::int64_t{2}}};
    CHECK(error_key("onednn", "Convolution", nxc, {random_tensor({1, 8, 4}, rng), random_tensor({3, 2, 4}, rng)}) ==
          "(no error)");
    CHECK(error_key("onednn", "Convolution", nxc, {random_tensor({1, 8, 5}, rng), random_tensor({3, 2, 4}, rng)}) ==
          "weights");
    CHECK(error_key("onednn", "ConvTranspose", nxc, {random_tensor({1, 8, 4}, rng), random_tensor({3, 1, 4}, rng)}) ==
          "(no error)");
    CHECK(error_key("onednn", "ConvTranspose", nxc, {random_tensor({1, 8, 4}, rng), random_tensor({3, 4, 1}, rng)}) ==
          "weights");
}

TEST_CASE("oneDNN inputs: counts, bias, ranks and dtypes", "[onednn]") {
    std::mt19937_64 rng(5);
    for (const OneDnnOp& o : onednn_ops()) {
        INFO(o.name);
        BaseCase b = base_case(o.name);
        std::vector<Tensor> in = b.inputs;
        // One input too few, and one too many.
        CHECK(error_key("onednn", o.name, {}, {in[0]}) == "inputs");
        std::vector<Tensor> more = in;
        if (more.size() == 2) more.push_back(random_tensor({b.result.back()}, rng));
        if (o.has_bias) {
            CHECK(error_key("onednn", o.name, {}, more) == "(no error)");
            more.push_back(more.back());
            CHECK(error_key("onednn", o.name, {}, more) == "inputs");
            // bias: 1-D, length = result channels, float.
            const std::int64_t C = b.result.back();
            CHECK(error_key("onednn", o.name, {}, {in[0], in[1], random_tensor({C + 1}, rng)}) == "bias");
            CHECK(error_key("onednn", o.name, {}, {in[0], in[1], random_tensor({1, C}, rng)}) == "bias");
            CHECK(error_key("onednn", o.name, {}, {in[0], in[1], Tensor::zeros({C}, DType::i32)}) == "bias");
        } else if (!o.needs_output_shape) {
            CHECK(error_key("onednn", o.name, {}, more) == "inputs");
        } else {
            more.push_back(in[2]);
            CHECK(error_key("onednn", o.name, {}, more) == "inputs");
        }
        // Rank: data rank >= 3 and filter rank = data rank; no upper bound for oneDNN.
        const std::string data_key = o.name == "Convolution" || o.name == "ConvTranspose" ? "src"
                                     : o.name == "ConvTransposeBackwardData"              ? "diff_dst"
                                                                                          : "output_delta";
        const std::string filter_key = o.format_attr == "weights_format" ? "weights" : "filter";
        std::vector<Tensor> low = in, high = in;
        low[0] = in[0].reshape({in[0].shape()[1], in[0].shape()[2]});
        CHECK(error_key("onednn", o.name, {}, low) == data_key);
        high[1] = in[1].reshape({3, 2, 4, 1});
        CHECK(error_key("onednn", o.name, {}, high) == filter_key);
        // The same numbers as a 2-D case with spatial shape (1, X) and kernel (1, 3): the
        // default formats are X-first, so a leading 1 goes in front of both.
        std::vector<Tensor> two_d{in[0].reshape({1, 1, in[0].shape()[1], in[0].shape()[2]}),
                                  in[1].reshape({1, in[1].shape()[0], in[1].shape()[1], in[1].shape()[2]})};
        if (o.needs_output_shape) two_d.push_back(shape_input({1, 1, 5, 2}));
        const Tensor y2 = run("onednn", o.name, {}, two_d);
        CHECK(y2.shape() == Shape{1, 1, b.result[1], b.result[2]});
        CHECK(max_abs_diff(y2.reshape(b.result), run("onednn", o.name, {}, in)) <= kTol);
        // Non-float data or filter.
        std::vector<Tensor> ints = in;
        ints[0] = in[0].to(DType::i32);
        CHECK(error_key("onednn", o.name, {}, ints) == data_key);
        ints = in;
        ints[1] = in[1].to(DType::i64);
        CHECK(error_key("onednn", o.name, {}, ints) == filter_key);
    }
}

// ---------------------------------------------------------------------------------------
// output_shape and Rule T-CBD (OPS.md 4, 5.7, D3, D5, D10)
// ---------------------------------------------------------------------------------------

TEST_CASE("oneDNN ConvolutionBackpropData output_shape: input or attribute, full or spatial, input wins", "[onednn]") {
    // Example 2's numbers in NXC with the default XIO filter: dd = [1,2,3], filter = [1,2,3],
    // stride 2, same_upper on Yo = 6: pb = 0, result [1,2,5,4,9,6]. C = 1 so NXC and NCX
    // hold the same numbers; the two C = 2 cases below tell the orders apart.
    const Tensor dd = Tensor::from({1, 3, 1}, {1, 2, 3}, DType::f64);
    const Tensor xio = Tensor::from({3, 1, 1}, {1, 2, 3}, DType::f64);
    const Attrs a{{"strides", IntList{2}}, {"auto_pad", std::string("same_upper")}};
    const V want{1, 2, 5, 4, 9, 6};
    const std::string op = "ConvolutionBackpropData";

    for (const IntList& shape : {IntList{1, 6, 1}, IntList{6}}) {
        INFO("output_shape " << shape_str(shape));
        CHECK(run("onednn", op, a, {dd, xio, shape_input(shape)}).values() == want);
        Attrs with = a;
        with["output_shape"] = shape;
        CHECK(run("onednn", op, with, {dd, xio}).values() == want);
        // i32 works as well as i64.
        CHECK(run("onednn", op, a, {dd, xio, shape_input(shape).to(DType::i32)}).values() == want);
    }
    SECTION("the input wins over the attribute") {
        Attrs with = a;
        with["output_shape"] = IntList{1, 8, 1};  // inconsistent on its own: ceil(8/2) = 4 != 3
        CHECK(error_key("onednn", op, with, {dd, xio}) == "output_shape");
        CHECK(run("onednn", op, with, {dd, xio, shape_input({1, 6, 1})}).values() == want);
        with["output_shape"] = IntList{1, 6, 1};
        CHECK(error_key("onednn", op, with, {dd, xio, shape_input({1, 8, 1})}) == "output_shape");
        // Yo = 5 also maps to X = 3 under same_upper: the input's 5 is used, not the attribute's 6.
        const Tensor y5 = run("onednn", op, with, {dd, xio, shape_input({5})});
        CHECK(y5.shape() == Shape{1, 5, 1});
        // same_upper on 5: T = (3-1)·2 + 3 - 5 = 2, pb = 1: [2,5,4,9,6].
        CHECK(y5.values() == V{2, 5, 4, 9, 6});
    }
    SECTION("an ignored attribute is still validated (OPS.md 3.3)") {
        for (const IntList& bad : {IntList{1, 6}, IntList{0}, IntList{1, 0, 1}, IntList{1, 6, 1, 1}}) {
            Attrs with = a;
            with["output_shape"] = bad;
            INFO("attribute " << shape_str(bad));
            CHECK(error_key("onednn", op, with, {dd, xio, shape_input({1, 6, 1})}) == "output_shape");
        }
        Attrs with = a;
        with["output_shape"] = std::string("6");
        CHECK(error_key("onednn", op, with, {dd, xio, shape_input({1, 6, 1})}) == "output_shape");
    }
    SECTION("bad output_shape values (error 8)") {
        CHECK(error_key("onednn", op, a, {dd, xio}) == "output_shape");  // missing
        CHECK(error_key("onednn", op, a, {dd, xio, shape_input({1, 1, 6, 1})}) == "output_shape");
        CHECK(error_key("onednn", op, a, {dd, xio, shape_input({1, 6})}) == "output_shape");
        CHECK(error_key("onednn", op, a, {dd, xio, shape_input({0})}) == "output_shape");
        CHECK(error_key("onednn", op, a, {dd, xio, shape_input({-6})}) == "output_shape");
        CHECK(error_key("onednn", op, a, {dd, xio, shape_input({2, 6, 1})}) == "output_shape");  // N
        CHECK(error_key("onednn", op, a, {dd, xio, shape_input({1, 6, 2})}) == "output_shape");  // C
        CHECK(error_key("onednn", op, a, {dd, xio, Tensor::from({1}, {6}, DType::f32)}) == "output_shape");
        CHECK(error_key("onednn", op, a, {dd, xio, shape_input({6}).reshape({1, 1})}) == "output_shape");
    }
    SECTION("the full form follows data_format; its C is g·filter_I") {
        std::mt19937_64 rng(21);
        // dd [1,3,4] NXC, XIO [3, C_ds/g = 1, C_dd = 4], groups 2: C_ds = 2.
        const Tensor dd2 = random_tensor({1, 3, 4}, rng), w2 = random_tensor({3, 1, 4}, rng);
        Attrs g2 = a;
        g2["groups"] = std::int64_t{2};
        CHECK(run("onednn", op, g2, {dd2, w2, shape_input({1, 6, 2})}).shape() == Shape{1, 6, 2});
        CHECK(error_key("onednn", op, g2, {dd2, w2, shape_input({1, 2, 6})}) == "output_shape");
        g2["data_format"] = std::string("NCX");  // now dd2 is [N=1, C=3, X=4]: C_dd 3 != 4
        CHECK(error_key("onednn", op, g2, {dd2, w2, shape_input({1, 2, 8})}) == "filter");
        const Tensor dd3 = to_ncx(dd2, Layout::NXC);
        const Tensor y_ncx = run("onednn", op, g2, {dd3, w2, shape_input({1, 2, 6})});
        CHECK(y_ncx.shape() == Shape{1, 2, 6});
        CHECK(error_key("onednn", op, g2, {dd3, w2, shape_input({1, 6, 2})}) == "output_shape");
        // The same numbers in both layouts.
        g2.erase("data_format");
        CHECK(max_abs_diff(to_ncx(run("onednn", op, g2, {dd2, w2, shape_input({1, 6, 2})}), Layout::NXC), y_ncx) <= kTol);
    }
}

TEST_CASE("Rule T-CBD: pads of the forward convolution on Yo, consistency check, output_padding unused", "[onednn]") {
    // dd = [1,2,3], OIX filter [1,2,3], stride 2, full transposed result [1,2,5,4,9,6,9] (L = 7).
    const Tensor dd = Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64);
    const Tensor w = Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64);
    const std::string op = "ConvolutionBackpropData";
    Attrs a{{"strides", IntList{2}}, {"data_format", std::string("NCX")}, {"filter_format", std::string("OIX")},
            {"pads_begin", IntList{1}}, {"pads_end", IntList{0}}};
    auto with_shape = [&](std::int64_t Yo) { return std::vector<Tensor>{dd, w, shape_input({1, 1, Yo})}; };
    // Explicit (1, 0): Yo = 6 and 7 both map to floor((Yo + 1 - 3)/2) + 1 = 3.
    CHECK(run("onednn", op, a, with_shape(6)).values() == V{2, 5, 4, 9, 6, 9});
    CHECK(run("onednn", op, a, with_shape(7)).values() == V{2, 5, 4, 9, 6, 9, 0});
    // Yo = 5 maps to 2 and Yo = 8 to 4: error 12, naming output_shape.
    CHECK(error_key("onednn", op, a, with_shape(5)) == "output_shape");
    CHECK(error_key("onednn", op, a, with_shape(8)) == "output_shape");
    // Yo + pb + pe < eff: the forward convolution cannot even run on Yo.
    a["pads_begin"] = IntList{0};
    CHECK(error_key("onednn", op, a, with_shape(2)) == "output_shape");
    CHECK(error_key("onednn", op, a, with_shape(1)) == "output_shape");
    // output_padding is validated but changes nothing: the shape is given.
    a["pads_begin"] = IntList{1};
    for (std::int64_t opad : {0, 1, 5}) {
        a["output_padding"] = IntList{opad};
        CHECK(run("onednn", op, a, with_shape(7)).values() == V{2, 5, 4, 9, 6, 9, 0});
    }
    // valid on Yo = 7: floor((7 - 3)/2) + 1 = 3, pb = 0.
    a["auto_pad"] = std::string("VALID");
    CHECK(run("onednn", op, a, with_shape(7)).values() == V{1, 2, 5, 4, 9, 6, 9});
    CHECK(error_key("onednn", op, a, with_shape(6)) == "output_shape");
    // same_lower on Yo = 5: ceil(5/2) = 3, T = 2, pb = 1.
    a["auto_pad"] = std::string("Same_Lower");
    CHECK(run("onednn", op, a, with_shape(5)).values() == V{2, 5, 4, 9, 6});
    CHECK(error_key("onednn", op, a, with_shape(7)) == "output_shape");  // ceil(7/2) = 4
}

TEST_CASE("Rule T-CT for oneDNN ConvTranspose", "[onednn]") {
    // src = [1,2,3], IOX [1,1,3] = [1,2,3], stride 2: full result [1,2,5,4,9,6,9], L = 7.
    const Tensor src = Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64);
    const Tensor w = Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64);
    const Attrs base{{"strides", IntList{2}}, {"data_format", std::string("NCX")}, {"weights_format", std::string("IOX")}};
    struct Row {
        Attrs extra;
        V want;
    };
    const std::vector<Row> rows{
        // SAME: T = eff - s = 1; same_upper pb = 0 (odd unit at the end), same_lower pb = 1; Y = s·X = 6.
        {{{"auto_pad", std::string("same_upper")}}, {1, 2, 5, 4, 9, 6}},
        {{{"auto_pad", std::string("same_lower")}}, {2, 5, 4, 9, 6, 9}},
        {{{"auto_pad", std::string("same_upper")}, {"output_padding", IntList{1}}}, {1, 2, 5, 4, 9, 6, 9}},
        // SAME ignores the pads attributes (but validates them).
        {{{"auto_pad", std::string("same_lower")}, {"pads_begin", IntList{3}}, {"pads_end", IntList{3}}},
         {2, 5, 4, 9, 6, 9}},
        // valid: pads 0, Y = L + op; positions past L are zero.
        {{{"auto_pad", std::string("valid")}}, {1, 2, 5, 4, 9, 6, 9}},
        {{{"auto_pad", std::string("valid")}, {"output_padding", IntList{2}}}, {1, 2, 5, 4, 9, 6, 9, 0, 0}},
        // explicit: the attribute pads; output_padding inside the full result is computed values.
        {{{"pads_begin", IntList{1}}, {"pads_end", IntList{1}}, {"output_padding", IntList{1}}}, {2, 5, 4, 9, 6, 9}},
        {{{"pads_begin", IntList{1}}, {"pads_end", IntList{1}}}, {2, 5, 4, 9, 6}},
        {{{"pads_begin", IntList{2}}, {"pads_end", IntList{0}}, {"output_padding", IntList{1}}}, {5, 4, 9, 6, 9, 0}},
    };
    for (const Row& row : rows) {
        Attrs a = base;
        for (const auto& [k, v] : row.extra) a[k] = v;
        std::ostringstream os;
        for (const auto& [k, v] : row.extra) os << k << " ";
        INFO(os.str());
        CHECK(run("onednn", "ConvTranspose", a, {src, w}).values() == row.want);
    }
    // eff < s: T = max(0, eff - s) = 0, so SAME gives Y = L = s·(X-1) + eff, not s·X.
    const Tensor w1 = Tensor::from({1, 1, 1}, {1}, DType::f64);
    Attrs s3 = base;
    s3["strides"] = IntList{3};
    s3["auto_pad"] = std::string("same_upper");
    CHECK(run("onednn", "ConvTranspose", s3, {src, w1}).values() == V{1, 0, 0, 2, 0, 0, 3});
    // Y < 1 is error 10.
    Attrs big = base;
    big["pads_begin"] = IntList{4};
    big["pads_end"] = IntList{3};
    CHECK(error_key("onednn", "ConvTranspose", big, {src, w}) == "pads_begin");
}

TEST_CASE("ConvTransposeBackpropData/BackwardData: Rule F on diff_dst, output_padding validated without effect",
          "[onednn]") {
    std::mt19937_64 rng(8);
    for (const std::string op : {"ConvTransposeBackpropData", "ConvTransposeBackwardData"}) {
        INFO(op);
        const BaseCase b = base_case(op);
        const Tensor y0 = run("onednn", op, {{"strides", IntList{2}}, {"pads_begin", IntList{1}}}, b.inputs);
        // X = 5, pads (1, 0), K = 3, s = 2: floor((5 + 1 - 3)/2) + 1 = 2.
        CHECK(y0.shape() == Shape{1, 2, 4});
        for (std::int64_t opad : {1, 2, 7}) {
            const Tensor y = run("onednn", op,
                                 {{"strides", IntList{2}}, {"pads_begin", IntList{1}}, {"output_padding", IntList{opad}}},
                                 b.inputs);
            CHECK(max_abs_diff(y, y0) == 0);
        }
        CHECK(error_key("onednn", op, {{"output_padding", IntList{0, 0}}}, b.inputs) == "output_padding");
        // Error 9: the dilated kernel is larger than the padded diff_dst.
        CHECK(error_key("onednn", op, {{"dilations", IntList{3}}}, b.inputs) != "(no error)");
        CHECK(error_key("onednn", op, {{"dilations", IntList{3}}, {"pads_begin", IntList{1}}}, b.inputs) == "filter");
        CHECK(error_key("onednn", op, {{"dilations", IntList{3}}, {"pads_begin", IntList{2}}}, b.inputs) == "(no error)");
    }
}

// ---------------------------------------------------------------------------------------
// Every layout x format x groups against the reference and the OpenVINO ops
// ---------------------------------------------------------------------------------------

namespace {

// Whether a table row's transposed size Y is also what the forward convolution maps back
// to X, i.e. what ConvolutionBackpropData accepts as output_shape (op < s on every axis).
bool cbd_consistent(const ConvConfig& c) {
    for (const auto& a : c.axes)
        if (a.op >= a.s) return false;
    return true;
}

// The output_shape forms of ConvolutionBackpropData, cycled over layouts and formats:
// input full, input spatial, attribute full, attribute spatial.
void add_output_shape(Attrs& attrs, std::vector<Tensor>& in, const Shape& ncx_result, Layout l, int form) {
    const IntList full = shape_in_layout(ncx_result, l), spatial = spatial_of(ncx_result);
    const IntList& v = form % 2 == 0 ? full : spatial;
    if (form < 2) in.push_back(shape_input(v));
    else attrs["output_shape"] = v;
}

}  // namespace

TEST_CASE("oneDNN ops on every table row: both layouts, both formats, groups, vs reference and OpenVINO", "[onednn]") {
    std::mt19937_64 rng(2024);
    int checked = 0;
    for (const ConvConfig& c : conv_table()) {
        const WorkspaceGuard ws(c.budget);
        for (bool transposed : {false, true}) {
            const ConvGeometry g = transposed ? testing::transposed_geometry(c) : testing::forward_geometry(c);
            const Tensor W = random_tensor(g.weight_shape(), rng);
            Shape cf_shape{g.G * g.Og, g.Ig};
            cf_shape.insert(cf_shape.end(), g.kernel.begin(), g.kernel.end());
            const Tensor cf = W.reshape(cf_shape);
            // The op's data input and the upstream gradient, NCX.
            const Tensor x = random_tensor(transposed ? g.out_shape() : g.in_shape(), rng);
            const Tensor dy = random_tensor(transposed ? g.in_shape() : g.out_shape(), rng);
            const Tensor ref = transposed ? reference::conv_transposed(x, W, g) : reference::conv_forward(x, W, g);
            const Tensor ref_dx = transposed ? reference::conv_forward(dy, W, g) : reference::conv_transposed(dy, W, g);
            const Tensor ref_dW =
                (transposed ? reference::conv_weight_grad(dy, x, g) : reference::conv_weight_grad(x, dy, g)).reshape(cf_shape);
            // The OpenVINO op with the same canonical grouped filter, on NCX data.
            const Tensor ov = run("openvino", transposed ? "GroupConvolutionBackpropData" : "GroupConvolution",
                                  ov_attrs(c, transposed), {x, W});
            REQUIRE(max_abs_diff(ov, ref) <= kTol);

            for (const OneDnnOp& o : onednn_ops()) {
                if (o.transposed != transposed) continue;
                for (Layout l : {Layout::NCX, Layout::NXC})
                    for (int f = 0; f < 2; ++f) {
                        INFO("row '" << c.name << "', " << o.name << " " << layout_name(l) << " " << o.formats[f]);
                        Attrs attrs = row_attrs(c, o, l, f);
                        std::vector<Tensor> in{to_layout(x, l), store_filter(cf, o.layouts[f])};
                        const Shape ref_shape = ref.shape();
                        Tensor want = ref, bias;
                        if (o.has_bias && (f == 1 || c.G > 1)) {
                            bias = random_tensor({ref_shape[1]}, rng);
                            in.push_back(bias);
                            want = add_channel_bias(ref, bias);
                        }
                        if (o.needs_output_shape) {
                            add_output_shape(attrs, in, ref_shape, l, (l == Layout::NXC ? 2 : 0) + f);
                            if (!cbd_consistent(c)) {
                                CHECK(error_key("onednn", o.name, attrs, in) == "output_shape");
                                ++checked;
                                continue;
                            }
                        }
                        const ResolvedOp r = resolve_op("onednn", o.name, attrs, in);
                        const Tensor y = run_op(r, in);
                        REQUIRE(y.shape() == r.result_shape);
                        CHECK(max_abs_diff(to_ncx(y, l), want) <= kTol);
                        if (!bias.defined()) CHECK(max_abs_diff(to_ncx(y, l), ov) <= kTol);

                        const std::vector<Tensor> grads = run_op_with_grads(r, in, to_layout(dy, l)).grads;
                        REQUIRE(grads.size() == in.size());
                        CHECK(max_abs_diff(to_ncx(grads[0], l), ref_dx) <= kTol);
                        CHECK(grads[1].shape() == in[1].shape());
                        CHECK(max_abs_diff(load_filter(grads[1], o.layouts[f]), ref_dW) <= kTol);
                        if (bias.defined()) CHECK(max_abs_diff(grads[2], channel_sums(dy)) <= kTol);
                        if (o.needs_output_shape && in.size() == 3) CHECK(!grads[2].defined());
                        ++checked;
                    }
            }
        }
    }
    CHECK(checked == static_cast<int>(conv_table().size()) * 5 * 4);
}

TEST_CASE("NXC and NCX give the same results on every table row (f32, every op and format)", "[onednn]") {
    std::mt19937_64 rng(77);
    const double eps = dtype_epsilon(DType::f32);
    for (const ConvConfig& c : conv_table()) {
        const WorkspaceGuard ws(c.budget);
        for (const OneDnnOp& o : onednn_ops()) {
            const ConvGeometry g = o.transposed ? testing::transposed_geometry(c) : testing::forward_geometry(c);
            Shape cf_shape{g.G * g.Og, g.Ig};
            cf_shape.insert(cf_shape.end(), g.kernel.begin(), g.kernel.end());
            const Tensor W = random_tensor(g.weight_shape(), rng, DType::f32);
            const Tensor x = random_tensor(o.transposed ? g.out_shape() : g.in_shape(), rng, DType::f32);
            // Σ|products| per element bounds the f32 summation error of either order.
            const Tensor aW = abs_tensor(W), ax = abs_tensor(x);
            const Tensor scale = o.transposed ? reference::conv_transposed(ax, aW, g) : reference::conv_forward(ax, aW, g);
            const double n = static_cast<double>(std::max(g.R(), g.Og * g.kernel_numel()) + 2);
            for (int f = 0; f < 2; ++f) {
                INFO("row '" << c.name << "', " << o.name << " " << o.formats[f]);
                Tensor y[2];
                for (Layout l : {Layout::NCX, Layout::NXC}) {
                    Attrs attrs = row_attrs(c, o, l, f);
                    std::vector<Tensor> in{to_layout(x, l), store_filter(W.reshape(cf_shape), o.layouts[f])};
                    if (o.needs_output_shape) {
                        if (!cbd_consistent(c)) continue;
                        add_output_shape(attrs, in, scale.shape(), l, 0);
                    }
                    y[l == Layout::NXC] = to_ncx(run("onednn", o.name, attrs, in), l);
                }
                if (!y[0].defined()) continue;
                REQUIRE(y[0].dtype() == DType::f32);
                const V a = y[0].values(), b = y[1].values(), s = scale.values();
                REQUIRE(a.size() == s.size());
                std::size_t bad = 0, differ = 0;
                for (std::size_t i = 0; i < a.size(); ++i) {
                    bad += std::fabs(a[i] - b[i]) > 2 * n * eps * s[i];
                    differ += a[i] != b[i];
                }
                INFO(differ << " of " << a.size() << " elements differ in the last bits");
                CHECK(bad == 0);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The equivalences of OPS.md section 6 (and 5.6-5.9)
// ---------------------------------------------------------------------------------------

namespace {

// A 2-D geometry with strides, dilations, asymmetric pads and output_padding < stride.
Attrs eq_attrs(Layout l, std::int64_t G) {
    return {{"strides", IntList{2, 1}},       {"dilations", IntList{1, 2}}, {"pads_begin", IntList{1, 0}},
            {"pads_end", IntList{0, 1}},      {"groups", G},                {"data_format", df(l)},
            {"output_padding", IntList{1, 0}}};
}

Attrs without(Attrs a, const std::string& key) {
    a.erase(key);
    return a;
}

Attrs set_attr(Attrs a, const std::string& key, AttrValue v) {
    a[key] = std::move(v);
    return a;
}

// [K1, K2, ...] filter axes swapped: (0,1) for the channel-first forms, the last two otherwise.
Tensor swap_axes(const Tensor& t, int a, int b) {
    std::vector<int> axes(static_cast<std::size_t>(t.ndim()));
    for (int i = 0; i < t.ndim(); ++i) axes[i] = i;
    std::swap(axes[a], axes[b]);
    return t.permute(axes).contiguous();
}

}  // namespace

TEST_CASE("section 6: ConvTranspose IOX/XOI = ConvolutionBackpropData on the same array read as OIX/XIO", "[onednn]") {
    std::mt19937_64 rng(61);
    for (std::int64_t G : {1, 2})
        for (Layout l : {Layout::NCX, Layout::NXC})
            for (int f = 0; f < 2; ++f) {
                INFO("G " << G << ", " << layout_name(l) << ", " << (f ? "XOI/XIO" : "IOX/OIX"));
                const Tensor src = to_layout(random_tensor({2, 3 * G, 3, 4}, rng), l);
                // IOX [IC = 3G, OC/g = 2, 3, 2]; its XOI form [3, 2, 2, 3G].
                const Tensor iox = random_tensor({3 * G, 2, 3, 2}, rng);
                const Tensor w = f ? store_filter(iox, FilterLayout::XBA) : iox;
                const Attrs a = eq_attrs(l, G);
                const Tensor ct = run("onednn", "ConvTranspose", set_attr(a, "weights_format", f ? "XOI" : "IOX"), {src, w});
                // 2·(3-1) + 3 - 1 + 1 = 7 and 1·(4-1) + 3 - 1 + 0 = 5.
                CHECK(ct.shape() == shape_in_layout({2, 2 * G, 7, 5}, l));
                const Tensor cbd = run("onednn", "ConvolutionBackpropData", set_attr(a, "filter_format", f ? "XIO" : "OIX"),
                                       {src, w, shape_input(ct.shape())});
                CHECK(max_abs_diff(ct, cbd) == 0);
            }
}

TEST_CASE("section 6: ConvTransposeBackwardData(dd, W) = Convolution(dd, W read as OIX; XOI read as XIO)", "[onednn]") {
    std::mt19937_64 rng(62);
    for (std::int64_t G : {1, 2})
        for (Layout l : {Layout::NCX, Layout::NXC})
            for (int f = 0; f < 2; ++f) {
                INFO("G " << G << ", " << layout_name(l) << ", " << (f ? "XOI/XIO" : "IOX/OIX"));
                // diff_dst has OC = G·2 channels; IOX [IC = 3G, OC/g = 2, 3, 2].
                const Tensor dd = to_layout(random_tensor({2, 2 * G, 7, 5}, rng), l);
                const Tensor iox = random_tensor({3 * G, 2, 3, 2}, rng);
                const Tensor w = f ? store_filter(iox, FilterLayout::XBA) : iox;
                const Attrs a = eq_attrs(l, G);
                const Tensor ctbd =
                    run("onednn", "ConvTransposeBackwardData", set_attr(a, "weights_format", f ? "XOI" : "IOX"), {dd, w});
                // floor((7 + 1 - 3)/2) + 1 = 3 and floor((5 + 1 - 3)/1) + 1 = 4.
                CHECK(to_ncx(ctbd, l).shape() == Shape{2, 3 * G, 3, 4});
                const Tensor conv = run("onednn", "Convolution",
                                        set_attr(without(a, "output_padding"), "weights_format", f ? "XIO" : "OIX"), {dd, w});
                CHECK(max_abs_diff(ctbd, conv) == 0);
            }
}

TEST_CASE("section 6: ConvTransposeBackpropData with the old formats = ConvTransposeBackwardData, axes swapped",
          "[onednn]") {
    std::mt19937_64 rng(63);
    for (std::int64_t G : {1, 2})
        for (Layout l : {Layout::NCX, Layout::NXC}) {
            INFO("G " << G << ", " << layout_name(l));
            const Tensor dd = to_layout(random_tensor({2, 2 * G, 7, 5}, rng), l);
            // Old OIX [OC/g = 2, IC = 3G, K...] and old XIO [K..., IC, OC/g].
            const Tensor oix_old = random_tensor({2, 3 * G, 3, 2}, rng);
            const Tensor xio_old = random_tensor({3, 2, 3 * G, 2}, rng);
            const Attrs a = eq_attrs(l, G);
            const Tensor p1 = run("onednn", "ConvTransposeBackpropData", set_attr(a, "filter_format", "OIX"), {dd, oix_old});
            const Tensor b1 = run("onednn", "ConvTransposeBackwardData", set_attr(a, "weights_format", "IOX"),
                                  {dd, swap_axes(oix_old, 0, 1)});
            CHECK(max_abs_diff(p1, b1) == 0);
            const Tensor p2 = run("onednn", "ConvTransposeBackpropData", set_attr(a, "filter_format", "XIO"), {dd, xio_old});
            const Tensor b2 = run("onednn", "ConvTransposeBackwardData", set_attr(a, "weights_format", "XOI"),
                                  {dd, swap_axes(xio_old, 2, 3)});
            CHECK(max_abs_diff(p2, b2) == 0);
            // The default filter_format is the old XIO.
            CHECK(max_abs_diff(run("onednn", "ConvTransposeBackpropData", a, {dd, xio_old}), p2) == 0);
            // Not a relabelling that happens to agree: the un-swapped array is a different op.
            if (G == 1)
                CHECK(error_key("onednn", "ConvTransposeBackwardData", set_attr(a, "weights_format", "IOX"), {dd, oix_old}) ==
                      "weights");
        }
}

TEST_CASE("ConvolutionBackpropData is the exact data gradient of oneDNN Convolution (T-CBD, every auto_pad)",
          "[onednn]") {
    std::mt19937_64 rng(64);
    // X = (6, 7), K = (3, 2), s = (2, 3), d = (1, 2): explicit pads leave trailing inputs
    // unused on axis 1; SAME has an odd total on axis 0.
    for (const std::string ap : {"explicit", "same_upper", "same_lower", "valid"})
        for (std::int64_t G : {1, 2})
            for (Layout l : {Layout::NCX, Layout::NXC})
                for (int f = 0; f < 2; ++f) {
                    INFO(ap << ", G " << G << ", " << layout_name(l) << ", " << (f ? "XIO" : "OIX"));
                    const Tensor x = to_layout(random_tensor({2, 2 * G, 6, 7}, rng), l);
                    const Tensor oix = random_tensor({3 * G, 2, 3, 2}, rng);
                    const Tensor w = f ? store_filter(oix, FilterLayout::XBA) : oix;
                    Attrs a{{"strides", IntList{2, 3}}, {"dilations", IntList{1, 2}}, {"pads_begin", IntList{1, 0}},
                            {"pads_end", IntList{0, 1}}, {"groups", G},           {"data_format", df(l)},
                            {"auto_pad", ap}};
                    const ResolvedOp conv =
                        resolve_op("onednn", "Convolution", set_attr(a, "weights_format", f ? "XIO" : "OIX"), {x, w});
                    const Tensor dy = random_tensor(conv.result_shape, rng);
                    const std::vector<Tensor> g = run_op_with_grads(conv, {x, w}, dy).grads;
                    const Tensor cbd = run("onednn", "ConvolutionBackpropData", set_attr(a, "filter_format", f ? "XIO" : "OIX"),
                                           {dy, w, shape_input(x.shape())});
                    CHECK(max_abs_diff(g[0], cbd) == 0);
                    // And it is the adjoint: <Conv(x), dy> = <x, CBD(dy)>.
                    CHECK(std::fabs(dot(run_op(conv, {x, w}), dy) - dot(x, cbd)) <= kTol * 100);
                }
}

TEST_CASE("ConvTransposeBackwardData is the data gradient of ConvTranspose when output_padding < stride", "[onednn]") {
    std::mt19937_64 rng(65);
    for (const std::string ap : {"explicit", "same_upper", "same_lower", "valid"})
        for (std::int64_t G : {1, 2})
            for (Layout l : {Layout::NCX, Layout::NXC})
                for (int f = 0; f < 2; ++f) {
                    INFO(ap << ", G " << G << ", " << layout_name(l) << ", " << (f ? "XOI" : "IOX"));
                    const Tensor src = to_layout(random_tensor({2, 3 * G, 3, 4}, rng), l);
                    const Tensor iox = random_tensor({3 * G, 2, 3, 2}, rng);
                    const Tensor w = f ? store_filter(iox, FilterLayout::XBA) : iox;
                    Attrs a = eq_attrs(l, G);
                    a["auto_pad"] = ap;
                    // SAME and valid keep op: ConvTranspose's Y = s·X + op must map back to X.
                    if (ap != "explicit") a["output_padding"] = IntList{0, 0};
                    a["weights_format"] = std::string(f ? "XOI" : "IOX");
                    const ResolvedOp ct = resolve_op("onednn", "ConvTranspose", a, {src, w});
                    const Tensor dy = random_tensor(ct.result_shape, rng);
                    const std::vector<Tensor> g = run_op_with_grads(ct, {src, w}, dy).grads;
                    const Tensor ctbd = run("onednn", "ConvTransposeBackwardData", a, {dy, w});
                    CHECK(max_abs_diff(g[0], ctbd) == 0);
                    CHECK(std::fabs(dot(run_op(ct, {src, w}), dy) - dot(src, ctbd)) <= kTol * 100);
                }
    // With output_padding >= stride the result no longer maps back: the shapes differ.
    const Tensor src = random_tensor({1, 5, 2}, rng), w = random_tensor({3, 4, 2}, rng);
    const Attrs a{{"strides", IntList{2}}, {"output_padding", IntList{2}}};
    const Tensor y = run("onednn", "ConvTranspose", a, {src, w});
    CHECK(run("onednn", "ConvTransposeBackwardData", a, {y, w}).shape() != src.shape());
}

// ---------------------------------------------------------------------------------------
// Gradients against central differences
// ---------------------------------------------------------------------------------------

TEST_CASE("oneDNN op gradients match central differences in f64, both layouts, every format, groups 1 and 2",
          "[onednn]") {
    std::mt19937_64 rng(99);
    // Per config: the i-side spatial size and the attributes (op < s wherever output_padding
    // is used, so that ConvolutionBackpropData can take the i-side size as output_shape).
    struct Cfg {
        std::string name;
        Shape Xi, K;
        Attrs attrs;
        Shape Xo;  // forward (Rule F) size of Xi
    };
    const std::vector<Cfg> cfgs{
        {"1-D stride 2 pads (1,0) op 1",
         {6},
         {3},
         {{"strides", IntList{2}}, {"pads_begin", IntList{1}}, {"pads_end", IntList{0}}, {"output_padding", IntList{1}}},
         {3}},
        {"1-D same_lower odd total",
         {5},
         {2},
         {{"strides", IntList{2}}, {"auto_pad", std::string("same_lower")}},
         {3}},
        {"2-D dilated same_upper",
         {4, 4},
         {2, 3},
         {{"strides", IntList{1, 2}}, {"dilations", IntList{2, 1}}, {"auto_pad", std::string("same_upper")}},
         {4, 2}},
    };
    int checked = 0;
    for (const Cfg& cfg : cfgs)
        for (const OneDnnOp& o : onednn_ops())
            for (std::int64_t G : {1, 2})
                for (Layout l : {Layout::NCX, Layout::NXC})
                    for (int f = 0; f < 2; ++f) {
                        INFO(cfg.name << ", " << o.name << ", G " << G << ", " << layout_name(l) << " " << o.formats[f]);
                        const std::int64_t Ig = 2, Og = 3;
                        Shape xs{1, (o.transposed ? Og : Ig) * G};
                        const Shape& sp = o.transposed ? cfg.Xo : cfg.Xi;
                        xs.insert(xs.end(), sp.begin(), sp.end());
                        Shape cf_shape{G * Og, Ig};
                        cf_shape.insert(cf_shape.end(), cfg.K.begin(), cfg.K.end());
                        Attrs a = cfg.attrs;
                        if (!o.has_output_padding) a.erase("output_padding");
                        a["groups"] = G;
                        a["data_format"] = df(l);
                        a[o.format_attr] = o.formats[f];
                        std::vector<Tensor> in{to_layout(random_tensor(xs, rng), l),
                                               store_filter(random_tensor(cf_shape, rng), o.layouts[f])};
                        if (o.needs_output_shape) {
                            Shape ys{1, Ig * G};
                            ys.insert(ys.end(), cfg.Xi.begin(), cfg.Xi.end());
                            in.push_back(shape_input(shape_in_layout(ys, l)));
                        }
                        const std::int64_t C_out = o.transposed ? Ig * G : Og * G;
                        if (o.has_bias) in.push_back(random_tensor({C_out}, rng));
                        const ResolvedOp r = resolve_op("onednn", o.name, a, in);
                        const Tensor dy = random_tensor(r.result_shape, rng);
                        const std::vector<Tensor> g = run_op_with_grads(r, in, dy).grads;
                        REQUIRE(g.size() == in.size());
                        for (std::size_t k = 0; k < in.size(); ++k) {
                            if (!is_float(in[k].dtype())) {
                                CHECK(!g[k].defined());
                                continue;
                            }
                            INFO("input " << k);
                            REQUIRE(g[k].shape() == in[k].shape());
                            CHECK(g[k].dtype() == in[k].dtype());
                            const Tensor num = numeric_grad(r, in, dy, k);
                            CHECK(max_abs_diff(g[k], num) <= 1e-10);
                        }
                        ++checked;
                    }
    CHECK(checked == 3 * 5 * 2 * 2 * 2);
}

TEST_CASE("oneDNN ops with N = 0: empty results and gradients of the right shapes (OPS.md 3.4)", "[onednn]") {
    std::mt19937_64 rng(100);
    for (const OneDnnOp& o : onednn_ops())
        for (Layout l : {Layout::NCX, Layout::NXC}) {
            INFO(o.name << " " << layout_name(l));
            BaseCase b = base_case(o.name);  // NXC; moved to NCX by hand when needed
            Shape xs = to_ncx(b.inputs[0], Layout::NXC).shape();
            xs[0] = 0;
            std::vector<Tensor> in{to_layout(Tensor::zeros(xs, DType::f64), l), b.inputs[1]};
            // With N = 0 the full output_shape form would need a 0, which 3.3 forbids: spatial only.
            if (o.needs_output_shape) in.push_back(shape_input({5}));
            if (o.has_bias) in.push_back(random_tensor({b.result.back()}, rng));
            const Attrs a{{"data_format", df(l)}};
            const ResolvedOp r = resolve_op("onednn", o.name, a, in);
            Shape want{0, b.result[2], b.result[1]};  // NCX
            CHECK(r.result_shape == shape_in_layout(want, l));
            const Tensor y = run_op(r, in);
            CHECK(y.shape() == r.result_shape);
            CHECK(y.numel() == 0);
            const std::vector<Tensor> g = run_op_with_grads(r, in, Tensor::zeros(r.result_shape, DType::f64)).grads;
            CHECK(g[0].shape() == in[0].shape());
            // No images: the filter and bias gradients are sums over nothing.
            CHECK(g[1].shape() == in[1].shape());
            CHECK(max_abs_diff(g[1], Tensor::zeros(in[1].shape(), DType::f64)) == 0);
            if (o.has_bias) CHECK(max_abs_diff(g[2], Tensor::zeros({b.result.back()}, DType::f64)) == 0);
        }
}
