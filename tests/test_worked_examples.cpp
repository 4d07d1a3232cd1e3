// Every number of the worked examples in OPS.md section 10, through the op table
// (resolve_op / run_op / run_op_with_grads). The expected values are the hand-computed ones
// printed in OPS.md, so these tests pin the padding rules of both opsets, not just the
// kernels. All values are small integers: comparisons are exact.
#include <catch2/catch.hpp>

#include <optional>

#include "tapegrad/core/tensor.hpp"
#include "tapegrad/spec/opset.hpp"

using namespace tg;

namespace {

using V = std::vector<double>;
using IntList = std::vector<std::int64_t>;

// Ex 1 and 2: data [1,1,3] = [1,2,3], filter [1,1,3] = [1,2,3], stride 2.
Tensor ex12_data() { return Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64); }
Tensor ex12_filter() { return Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64); }
// Ex 3: src [1,1,4] = [1,2,3,4], weights [1,1,3] = [1,0,-1], stride 2.
Tensor ex3_src() { return Tensor::from({1, 1, 4}, {1, 2, 3, 4}, DType::f64); }
Tensor ex3_weights() { return Tensor::from({1, 1, 3}, {1, 0, -1}, DType::f64); }

Tensor shape_input(const IntList& v) {
    V d(v.begin(), v.end());
    return Tensor::from({static_cast<std::int64_t>(v.size())}, d, DType::i64);
}

struct ResolvedRun {
    ResolvedOp op;
    Tensor result;
};

ResolvedRun run(const std::string& opset, const std::string& op, const Attrs& attrs, const std::vector<Tensor>& inputs) {
    ResolvedRun r{resolve_op(opset, op, attrs, inputs), Tensor()};
    r.result = run_op(r.op, inputs);
    CHECK(r.result.shape() == r.op.result_shape);
    return r;
}

void check_values(const Tensor& t, const Shape& shape, const V& want) {
    CHECK(t.shape() == shape);
    CHECK(t.values() == want);
}

std::string key_of(const std::string& opset, const std::string& op, const Attrs& attrs, const std::vector<Tensor>& in) {
    try {
        resolve_op(opset, op, attrs, in);
    } catch (const Error& e) {
        return e.key();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("OPS.md Example 1: OV ConvolutionBackpropData, stride 2, asymmetric pads, output_padding", "[ov]") {
    const std::vector<Tensor> in{ex12_data(), ex12_filter()};
    SECTION("the full result, L = 7") {
        const ResolvedRun r = run("openvino", "ConvolutionBackpropData", {{"strides", IntList{2}}, {"dilations", IntList{1}}}, in);
        CHECK(r.op.axes[0].L == 7);
        check_values(r.result, {1, 1, 7}, {1, 2, 5, 4, 9, 6, 9});
    }
    struct Row {
        std::int64_t pb, pe, op;
        V want;
    };
    for (const Row& row : {Row{1, 0, 1, {2, 5, 4, 9, 6, 9, 0}}, Row{1, 1, 1, {2, 5, 4, 9, 6, 9}}, Row{1, 1, 0, {2, 5, 4, 9, 6}}}) {
        INFO("pads_begin " << row.pb << ", pads_end " << row.pe << ", output_padding " << row.op);
        const Attrs attrs{{"strides", IntList{2}},         {"dilations", IntList{1}},
                          {"pads_begin", IntList{row.pb}}, {"pads_end", IntList{row.pe}},
                          {"output_padding", IntList{row.op}}, {"auto_pad", std::string("explicit")}};
        const ResolvedRun r = run("openvino", "ConvolutionBackpropData", attrs, in);
        check_values(r.result, {1, 1, static_cast<std::int64_t>(row.want.size())}, row.want);
        CHECK(r.op.axes[0].pb == row.pb);
    }
    SECTION("gradients of the last row with dy = [1, 0, 0, 0, 1]") {
        const Attrs attrs{{"strides", IntList{2}}, {"pads_begin", IntList{1}}, {"pads_end", IntList{1}},
                          {"output_padding", IntList{0}}};
        const ResolvedOp r = resolve_op("openvino", "ConvolutionBackpropData", attrs, in);
        const std::vector<Tensor> g = run_op_with_grads(r, in, Tensor::from({1, 1, 5}, {1, 0, 0, 0, 1}, DType::f64)).grads;
        REQUIRE(g.size() == 2);
        check_values(g[0], {1, 1, 3}, {2, 0, 2});
        check_values(g[1], {1, 1, 3}, {0, 4, 0});
    }
}

TEST_CASE("OPS.md Example 2: output_shape with an odd total padding, OpenVINO rows", "[ov]") {
    struct Row {
        std::string auto_pad;
        std::int64_t out;
        std::int64_t pb;
        V want;
    };
    const std::vector<Row> rows{
        {"same_upper", 6, 1, {2, 5, 4, 9, 6, 9}},
        {"same_lower", 6, 0, {1, 2, 5, 4, 9, 6}},
        {"valid", 6, 0, {1, 2, 5, 4, 9, 6}},
        {"explicit", 6, 1, {2, 5, 4, 9, 6, 9}},
        {"same_upper", 8, 0, {1, 2, 5, 4, 9, 6, 9, 0}},
    };
    for (const Row& row : rows) {
        INFO(row.auto_pad << ", output_shape [" << row.out << "]");
        // pads_end 4 is deliberately inconsistent: with output_shape it must be ignored.
        const Attrs attrs{{"strides", IntList{2}}, {"auto_pad", row.auto_pad}, {"pads_begin", IntList{1}},
                          {"pads_end", IntList{4}}};
        const ResolvedRun r = run("openvino", "ConvolutionBackpropData", attrs,
                          {ex12_data(), ex12_filter(), shape_input({row.out})});
        CHECK(r.op.axes[0].pb == row.pb);
        check_values(r.result, {1, 1, row.out}, row.want);
    }
    SECTION("the same rows through GroupConvolutionBackpropData with G = 1") {
        const Attrs attrs{{"strides", IntList{2}}, {"auto_pad", std::string("SAME_UPPER")}};
        const ResolvedRun r = run("openvino", "GroupConvolutionBackpropData", attrs,
                          {ex12_data(), Tensor::from({1, 1, 1, 3}, {1, 2, 3}, DType::f64), shape_input({6})});
        check_values(r.result, {1, 1, 6}, {2, 5, 4, 9, 6, 9});
    }
}

TEST_CASE("OPS.md Example 2: oneDNN ConvolutionBackpropData rows (Rule T-CBD)", "[ov]") {
    const Attrs base{{"strides", IntList{2}}, {"data_format", std::string("NCX")}, {"filter_format", std::string("OIX")}};
    struct Row {
        std::string auto_pad;
        IntList pads_begin, pads_end;
        std::int64_t pb;
        V want;
    };
    const std::vector<Row> rows{
        {"same_upper", {}, {}, 0, {1, 2, 5, 4, 9, 6}},
        {"same_lower", {}, {}, 1, {2, 5, 4, 9, 6, 9}},
        {"explicit", {1}, {0}, 1, {2, 5, 4, 9, 6, 9}},
    };
    for (const Row& row : rows) {
        Attrs attrs = base;
        attrs["auto_pad"] = row.auto_pad;
        if (!row.pads_begin.empty()) {
            attrs["pads_begin"] = row.pads_begin;
            attrs["pads_end"] = row.pads_end;
        }
        INFO(row.auto_pad << ", output_shape given as an input");
        const ResolvedRun r = run("onednn", "ConvolutionBackpropData", attrs,
                          {ex12_data(), ex12_filter(), shape_input({1, 1, 6})});
        CHECK(r.op.axes[0].pb == row.pb);
        check_values(r.result, {1, 1, 6}, row.want);
        INFO(row.auto_pad << ", output_shape given as an attribute");
        attrs["output_shape"] = IntList{1, 1, 6};
        const ResolvedRun r2 = run("onednn", "ConvolutionBackpropData", attrs, {ex12_data(), ex12_filter()});
        check_values(r2.result, {1, 1, 6}, row.want);
    }
    SECTION("valid: floor((6-3)/2) + 1 = 2 != 3 is an error naming output_shape") {
        Attrs attrs = base;
        attrs["auto_pad"] = std::string("valid");
        CHECK(key_of("onednn", "ConvolutionBackpropData", attrs, {ex12_data(), ex12_filter(), shape_input({1, 1, 6})}) ==
              "output_shape");
    }
}

TEST_CASE("OPS.md Example 3: Convolution with SAME and an odd total, gradients, matching backprop", "[ov]") {
    const std::vector<Tensor> in{ex3_src(), ex3_weights()};
    struct ConvOp {
        std::string opset;
        Attrs extra;
    };
    const std::vector<ConvOp> convs{
        {"openvino", {}},
        {"onednn", {{"data_format", std::string("NCX")}, {"weights_format", std::string("OIX")}}},
    };
    for (const ConvOp& c : convs) {
        INFO(c.opset << " Convolution");
        Attrs upper = c.extra, lower = c.extra;
        upper["strides"] = lower["strides"] = IntList{2};
        upper["auto_pad"] = std::string("same_upper");
        lower["auto_pad"] = std::string("same_lower");

        const ResolvedRun ru = run(c.opset, "Convolution", upper, in);
        CHECK(ru.op.axes[0].pb == 0);
        CHECK(ru.op.axes[0].pe == 1);
        check_values(ru.result, {1, 1, 2}, {-2, 3});

        const ResolvedRun rl = run(c.opset, "Convolution", lower, in);
        CHECK(rl.op.axes[0].pb == 1);
        CHECK(rl.op.axes[0].pe == 0);
        check_values(rl.result, {1, 1, 2}, {-2, -2});

        const std::vector<Tensor> g = run_op_with_grads(ru.op, in, Tensor::from({1, 1, 2}, {1, 1}, DType::f64)).grads;
        REQUIRE(g.size() == 2);
        check_values(g[0], {1, 1, 4}, {1, 0, 0, 0});
        check_values(g[1], {1, 1, 3}, {4, 6, 3});
    }

    const Tensor dd = Tensor::from({1, 1, 2}, {1, 1}, DType::f64);
    const Attrs ncx_oix{{"strides", IntList{2}}, {"data_format", std::string("NCX")}, {"filter_format", std::string("OIX")}};
    SECTION("oneDNN ConvolutionBackpropData, pads (0, 1), output_shape [1,1,4]") {
        Attrs a = ncx_oix;
        a["pads_begin"] = IntList{0};
        a["pads_end"] = IntList{1};
        const ResolvedRun r = run("onednn", "ConvolutionBackpropData", a, {dd, ex3_weights(), shape_input({1, 1, 4})});
        CHECK(r.op.axes[0].pb == 0);
        check_values(r.result, {1, 1, 4}, {1, 0, 0, 0});
    }
    SECTION("oneDNN ConvolutionBackpropData, same_upper, output_shape [1,1,4]") {
        Attrs a = ncx_oix;
        a["auto_pad"] = std::string("same_upper");
        const ResolvedRun r = run("onednn", "ConvolutionBackpropData", a, {dd, ex3_weights(), shape_input({1, 1, 4})});
        CHECK(r.op.axes[0].pb == 0);
        CHECK(r.op.axes[0].pe == 1);
        check_values(r.result, {1, 1, 4}, {1, 0, 0, 0});
    }
    SECTION("OV ConvolutionBackpropData, same_upper, output_shape [4]: pb = 1, not the gradient (D1)") {
        const ResolvedRun r = run("openvino", "ConvolutionBackpropData",
                          {{"strides", IntList{2}}, {"auto_pad", std::string("same_upper")}},
                          {dd, ex3_weights(), shape_input({4})});
        CHECK(r.op.axes[0].pb == 1);
        check_values(r.result, {1, 1, 4}, {0, 0, 0, -1});
    }
    SECTION("OV ConvolutionBackpropData, same_lower, output_shape [4]") {
        const ResolvedRun r = run("openvino", "ConvolutionBackpropData",
                          {{"strides", IntList{2}}, {"auto_pad", std::string("same_lower")}},
                          {dd, ex3_weights(), shape_input({4})});
        CHECK(r.op.axes[0].pb == 0);
        check_values(r.result, {1, 1, 4}, {1, 0, 0, 0});
    }
}

TEST_CASE("OPS.md Example 4: oneDNN ConvTranspose NXC groups 2 and its adjoint ops", "[ov]") {
    // src NXC [1,2,2]: channel 0 = [1,3], channel 1 = [2,4].
    const Tensor src = Tensor::from({1, 2, 2}, {1, 2, 3, 4}, DType::f64);
    // IOX [2,1,2]: W[ic=0] = [[1,1]], W[ic=1] = [[1,-1]]; as XOI the same nested list.
    const Tensor iox = Tensor::from({2, 1, 2}, {1, 1, 1, -1}, DType::f64);
    const Tensor xoi = Tensor::from({2, 1, 2}, {1, 1, 1, -1}, DType::f64);
    const Tensor diff_dst = Tensor::from({1, 3, 2}, {1, 0, 0, 1, 1, 1}, DType::f64);
    const V dst{1, 2, 4, 2, 3, -4};
    const V diff_src{1, -1, 1, 0};
    const Attrs nxc_g2{{"groups", std::int64_t{2}}, {"data_format", std::string("NXC")}, {"strides", IntList{1}},
                       {"pads_begin", IntList{0}}, {"pads_end", IntList{0}}};

    SECTION("ConvTranspose, IOX and XOI (the default)") {
        Attrs a = nxc_g2;
        a["weights_format"] = std::string("IOX");
        const ResolvedRun r = run("onednn", "ConvTranspose", a, {src, iox});
        check_values(r.result, {1, 3, 2}, dst);
        Attrs d = nxc_g2;
        d.erase("data_format");  // NXC is the default too
        check_values(run("onednn", "ConvTranspose", d, {src, xoi}).result, {1, 3, 2}, dst);
        // Its data gradient is ConvTransposeBackwardData applied to dy.
        const std::vector<Tensor> g = run_op_with_grads(r.op, {src, iox}, diff_dst).grads;
        check_values(g[0], {1, 2, 2}, diff_src);
    }
    SECTION("ConvTransposeBackwardData with the same weights") {
        Attrs a = nxc_g2;
        a["weights_format"] = std::string("IOX");
        check_values(run("onednn", "ConvTransposeBackwardData", a, {diff_dst, iox}).result, {1, 2, 2}, diff_src);
        check_values(run("onednn", "ConvTransposeBackwardData", nxc_g2, {diff_dst, xoi}).result, {1, 2, 2}, diff_src);
    }
    SECTION("ConvTransposeBackpropData with the old OIX filter [1,2,2]") {
        Attrs a = nxc_g2;
        a["filter_format"] = std::string("OIX");
        const Tensor oix_old = Tensor::from({1, 2, 2}, {1, 1, 1, -1}, DType::f64);
        check_values(run("onednn", "ConvTransposeBackpropData", a, {diff_dst, oix_old}).result, {1, 2, 2}, diff_src);
    }
    SECTION("adjoint check: <dst, diff_dst> = 2 = <src, diff_src>") {
        const V s = src.values(), dd = diff_dst.values();
        double a = 0, b = 0;
        for (std::size_t i = 0; i < dst.size(); ++i) a += dst[i] * dd[i];
        for (std::size_t i = 0; i < diff_src.size(); ++i) b += s[i] * diff_src[i];
        CHECK(a == 2);
        CHECK(b == 2);
    }
}

TEST_CASE("OPS.md Example 5: OV GroupConvolutionBackpropData, G = 2, stride 2", "[ov]") {
    const Tensor data = Tensor::from({1, 2, 2}, {1, 2, 3, 4}, DType::f64);
    // F[0,0] = [[1,1],[1,-1]], F[1,0] = [[2,0],[0,1]].
    const Tensor filter = Tensor::from({2, 1, 2, 2}, {1, 1, 1, -1, 2, 0, 0, 1}, DType::f64);
    const ResolvedRun r = run("openvino", "GroupConvolutionBackpropData",
                      {{"strides", IntList{2}}, {"pads_begin", IntList{0}}, {"pads_end", IntList{0}}}, {data, filter});
    CHECK(r.op.geom.G == 2);
    check_values(r.result, {1, 4, 4}, {1, 1, 2, 2, 1, -1, 2, -2, 6, 0, 8, 0, 0, 3, 0, 4});
}

TEST_CASE("worked examples in f32, f16 and bf16 give the same small integers", "[ov]") {
    // Every intermediate value is a small integer, exact in every dtype.
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
        INFO(dtype_name(dt));
        const std::vector<Tensor> in{Tensor::from({1, 2, 2}, {1, 2, 3, 4}, dt),
                                     Tensor::from({2, 1, 2, 2}, {1, 1, 1, -1, 2, 0, 0, 1}, dt)};
        const ResolvedRun r = run("openvino", "GroupConvolutionBackpropData", {{"strides", IntList{2}}}, in);
        CHECK(r.result.dtype() == dt);
        check_values(r.result, {1, 4, 4}, {1, 1, 2, 2, 1, -1, 2, -2, 6, 0, 8, 0, 0, 3, 0, 4});
    }
}
