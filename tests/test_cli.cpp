// The command line, end to end: the built tapegrad binary on case files written into a
// temporary folder. For every error class of OPS.md 3.5 (and bad case files) it must exit
// 1, print exactly one `error:` line naming the offending key, and leave no file behind.
// `tapegrad bench` is checked the same way on tiny shapes files (--min-time 0.01).
#include <algorithm>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tapegrad/core/npy.hpp"
#include "tapegrad/core/tensor.hpp"
#include "support_files.hpp"

using namespace tg;
using namespace tg::testsov;
using json = nlohmann::json;

namespace {

using V = std::vector<double>;

// A case folder to be written: the case document (or raw text) plus its files.
struct CaseSpec {
    json doc;
    std::vector<std::pair<std::string, Tensor>> npys;
    std::vector<std::pair<std::string, std::string>> raw;  // file name, bytes
    std::optional<std::string> raw_case;                    // replaces doc when set

    CaseSpec& attr(const std::string& k, json v) {
        doc["attrs"][k] = std::move(v);
        return *this;
    }
    CaseSpec& file(const std::string& name, const Tensor& t) {
        for (auto& [n, tt] : npys)
            if (n == name) { tt = t; return *this; }
        npys.emplace_back(name, t);
        return *this;
    }
    CaseSpec& bytes(const std::string& name, const std::string& b) {
        for (auto it = npys.begin(); it != npys.end(); ++it)
            if (it->first == name) { npys.erase(it); break; }
        raw.emplace_back(name, b);
        return *this;
    }
    void write_into(const TempDir& dir) const {
        for (const auto& [n, t] : npys) write_npy(dir / n, t);
        for (const auto& [n, b] : raw) write_bytes(dir / n, b);
        write_bytes(dir / "case.json", raw_case ? *raw_case : doc.dump());
    }
};

Tensor ints(const std::vector<std::int64_t>& v, DType dt = DType::i64) {
    return Tensor::from({static_cast<std::int64_t>(v.size())}, V(v.begin(), v.end()), dt);
}

// OPS.md Example 1/2 data: OV ConvolutionBackpropData, data = filter = [1, 2, 3], stride 2.
CaseSpec ov_cbd() {
    CaseSpec c;
    c.doc = {{"opset", "openvino"}, {"op", "ConvolutionBackpropData"}, {"attrs", {{"strides", {2}}}},
             {"inputs", {"data.npy", "filter.npy"}}, {"output", "out.npy"}};
    c.file("data.npy", Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64)).file("filter.npy", Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64));
    return c;
}

CaseSpec ov_cbd_shape(const Tensor& shape) {
    CaseSpec c = ov_cbd();
    c.doc["inputs"].push_back("output_shape.npy");
    c.file("output_shape.npy", shape);
    return c;
}

// OPS.md Example 3: OV Convolution on [1, 2, 3, 4] with [1, 0, -1].
CaseSpec ov_conv() {
    CaseSpec c;
    c.doc = {{"op", "Convolution"}, {"attrs", json::object()}, {"inputs", {"data.npy", "filter.npy"}}, {"output", "out.npy"}};
    c.file("data.npy", Tensor::from({1, 1, 4}, {1, 2, 3, 4}, DType::f64)).file("filter.npy", Tensor::from({1, 1, 3}, {1, 0, -1}, DType::f64));
    return c;
}

CaseSpec ov_group_cbd() {  // OPS.md Example 5
    CaseSpec c;
    c.doc = {{"op", "GroupConvolutionBackpropData"}, {"attrs", {{"strides", {2}}}},
             {"inputs", {"data.npy", "filter.npy"}}, {"output", "out.npy"}};
    c.file("data.npy", Tensor::from({1, 2, 2}, {1, 2, 3, 4}, DType::f64))
        .file("filter.npy", Tensor::from({2, 1, 2, 2}, {1, 1, 1, -1, 2, 0, 0, 1}, DType::f64));
    return c;
}

// OPS.md Example 2, oneDNN rows: NCX/OIX, output_shape [1, 1, 6] as an i4 input.
CaseSpec onednn_cbd() {
    CaseSpec c;
    c.doc = {{"opset", "onednn"},
             {"op", "ConvolutionBackpropData"},
             {"attrs", {{"strides", {2}}, {"data_format", "NCX"}, {"filter_format", "OIX"}, {"auto_pad", "same_upper"}}},
             {"inputs", {"output_delta.npy", "filter.npy", "output_shape.npy"}},
             {"output", "out.npy"}};
    c.file("output_delta.npy", Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64))
        .file("filter.npy", Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f64))
        .file("output_shape.npy", ints({1, 1, 6}, DType::i32));
    return c;
}

// OPS.md Example 4: oneDNN ConvTranspose, NXC, IOX, groups 2.
CaseSpec onednn_ct() {
    CaseSpec c;
    c.doc = {{"opset", "onednn"},
             {"op", "ConvTranspose"},
             {"attrs", {{"groups", 2}, {"data_format", "NXC"}, {"weights_format", "IOX"}}},
             {"inputs", {"src.npy", "weights.npy"}},
             {"output", "out.npy"}};
    c.file("src.npy", Tensor::from({1, 2, 2}, {1, 2, 3, 4}, DType::f64)).file("weights.npy", Tensor::from({2, 1, 2}, {1, 1, 1, -1}, DType::f64));
    return c;
}

CaseSpec onednn_conv() {  // NCX / OIX, IC 4, OC 2
    CaseSpec c;
    c.doc = {{"opset", "onednn"},
             {"op", "Convolution"},
             {"attrs", {{"data_format", "NCX"}, {"weights_format", "OIX"}}},
             {"inputs", {"src.npy", "weights.npy"}},
             {"output", "out.npy"}};
    c.file("src.npy", Tensor::zeros({1, 4, 5}, DType::f64)).file("weights.npy", Tensor::zeros({2, 4, 3}, DType::f64));
    return c;
}

CaseSpec with_grads(CaseSpec c, const Tensor& dy, json grad_inputs) {
    c.doc["grad_output"] = "dy.npy";
    c.doc["grad_inputs"] = std::move(grad_inputs);
    c.file("dy.npy", dy);
    return c;
}

// Runs `tapegrad <command>` on the case and checks the error contract: exit 1, one
// stderr line `error: ...` containing `must_name`, nothing on stdout, no file written.
void expect_error(const std::string& label, const CaseSpec& c, const std::string& must_name,
                  const std::string& command = "run") {
    TempDir work, scratch;
    c.write_into(work);
    const std::set<std::string> before = work.files();
    const CommandResult r = run_tapegrad({command, work / "case.json"}, scratch);
    INFO(label << "\n  stderr: " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.rfind("error: ", 0) == 0);
    CHECK_THAT(r.err, Catch::Contains(must_name));
    CHECK(r.out.empty());
    CHECK(work.files() == before);
}

CommandResult run_ok(const CaseSpec& c, const TempDir& work, const std::string& command = "run") {
    TempDir scratch;
    c.write_into(work);
    const CommandResult r = run_tapegrad({command, work / "case.json"}, scratch);
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    return r;
}

std::string npy_header_only(const std::string& dict) { return npy_bytes(dict, ""); }

}  // namespace

TEST_CASE("cli 3.5 class 1: unknown opset, op or attribute; wrong input count; missing output_shape", "[cli]") {
    {
        CaseSpec c = ov_cbd();
        c.doc["opset"] = "tensorflow";
        expect_error("unknown opset", c, "opset");
    }
    {
        CaseSpec c = ov_cbd();
        c.doc["op"] = "Deconvolution";
        expect_error("unknown op", c, "Deconvolution");
    }
    {
        CaseSpec c = ov_cbd();
        c.doc["opset"] = "onednn";
        c.doc["op"] = "GroupConvolutionBackpropData";  // an OpenVINO-only op
        expect_error("op of the other opset", c, "GroupConvolutionBackpropData");
    }
    expect_error("unknown attribute", ov_cbd().attr("padding", {1}), "padding");
    expect_error("groups is not an OpenVINO attribute", ov_cbd().attr("groups", 1), "groups");
    expect_error("output_padding is not a Convolution attribute", ov_conv().attr("output_padding", {0}), "output_padding");
    expect_error("data_format is not an OpenVINO attribute", ov_conv().attr("data_format", "NCX"), "data_format");
    {
        CaseSpec c = ov_conv();
        c.doc["inputs"].push_back("data.npy");
        expect_error("three inputs to OV Convolution", c, "inputs");
    }
    {
        CaseSpec c = ov_conv();
        c.doc["inputs"] = {"data.npy"};
        expect_error("one input", c, "inputs");
    }
    {
        CaseSpec c = ov_cbd_shape(ints({6}));
        c.doc["inputs"].push_back("output_shape.npy");
        expect_error("four inputs to ConvolutionBackpropData", c, "inputs");
    }
    {
        CaseSpec c = onednn_cbd();
        c.doc["inputs"] = {"output_delta.npy", "filter.npy"};
        expect_error("oneDNN ConvolutionBackpropData without output_shape", c, "output_shape");
    }
}

TEST_CASE("cli 3.5 class 2: attribute types and lengths", "[cli]") {
    expect_error("strides as a string", ov_cbd().attr("strides", "2"), "strides");
    expect_error("strides as an integer", ov_cbd().attr("strides", 2), "strides");
    expect_error("strides of length 2 on 1-D data", ov_cbd().attr("strides", {2, 2}), "strides");
    expect_error("empty dilations", ov_cbd().attr("dilations", json::array()), "dilations");
    expect_error("pads_begin of floats", ov_cbd().attr("pads_begin", {1.5}), "pads_begin");
    expect_error("pads_end as an object", ov_cbd().attr("pads_end", {{"a", 1}}), "pads_end");
    expect_error("output_padding as a bool", ov_cbd().attr("output_padding", {true}), "output_padding");
    expect_error("auto_pad as a list", ov_cbd().attr("auto_pad", {1}), "auto_pad");
    expect_error("auto_pad as an integer", ov_cbd().attr("auto_pad", 3), "auto_pad");
    expect_error("groups as a list", onednn_ct().attr("groups", {2}), "groups");
    expect_error("groups as a string", onednn_ct().attr("groups", "2"), "groups");
    expect_error("data_format as an integer", onednn_ct().attr("data_format", 1), "data_format");
    expect_error("weights_format as a list", onednn_ct().attr("weights_format", {1}), "weights_format");
    expect_error("a null attribute", ov_cbd().attr("strides", nullptr), "strides");
    expect_error("attrs not an object", [] { CaseSpec c = ov_cbd(); c.doc["attrs"] = {1, 2}; return c; }(), "attrs");
}

TEST_CASE("cli 3.5 class 3: non-positive strides/dilations, negative pads, groups < 1", "[cli]") {
    expect_error("stride 0", ov_cbd().attr("strides", {0}), "strides");
    expect_error("stride -1", ov_conv().attr("strides", {-1}), "strides");
    expect_error("dilation 0", ov_cbd().attr("dilations", {0}), "dilations");
    expect_error("negative pads_begin", ov_cbd().attr("pads_begin", {-1}), "pads_begin");
    expect_error("negative pads_end", ov_conv().attr("pads_end", {-1}), "pads_end");
    // Pads that auto_pad ignores are still validated.
    expect_error("negative pads_end under valid", ov_conv().attr("auto_pad", "valid").attr("pads_end", {-2}), "pads_end");
    expect_error("negative output_padding", ov_cbd().attr("output_padding", {-1}), "output_padding");
    expect_error("groups 0", onednn_ct().attr("groups", 0), "groups");
    expect_error("groups -2", onednn_conv().attr("groups", -2), "groups");
}

TEST_CASE("cli 3.5 class 4: values outside their sets", "[cli]") {
    expect_error("auto_pad same", ov_cbd().attr("auto_pad", "same"), "auto_pad");
    expect_error("auto_pad empty", ov_conv().attr("auto_pad", ""), "auto_pad");
    expect_error("data_format NHWC", onednn_ct().attr("data_format", "NHWC"), "data_format");
    expect_error("ConvTranspose weights_format OIX", onednn_ct().attr("weights_format", "OIX"), "weights_format");
    expect_error("Convolution weights_format XOI", onednn_conv().attr("weights_format", "XOI"), "weights_format");
    expect_error("ConvolutionBackpropData filter_format IOX", onednn_cbd().attr("filter_format", "IOX"), "filter_format");
}

TEST_CASE("cli 3.5 class 5: ranks", "[cli]") {
    expect_error("data of rank 2", ov_conv().file("data.npy", Tensor::zeros({1, 4}, DType::f64)), "data");
    expect_error("OV Convolution rank 6",
                 ov_conv().file("data.npy", Tensor::zeros({1, 1, 2, 2, 2, 2}, DType::f64))
                     .file("filter.npy", Tensor::zeros({1, 1, 1, 1, 1, 1}, DType::f64)),
                 "data");
    expect_error("filter rank below data rank", ov_conv().file("filter.npy", Tensor::zeros({1, 3}, DType::f64)), "filter");
    expect_error("GroupConvolutionBackpropData filter rank = data rank",
                 ov_group_cbd().file("filter.npy", Tensor::zeros({2, 1, 2}, DType::f64)), "filter");
    expect_error("oneDNN filter rank above data rank", onednn_ct().file("weights.npy", Tensor::zeros({2, 1, 2, 1}, DType::f64)),
                 "weights");
}

TEST_CASE("cli 3.5 class 6: zero-size channel, spatial, kernel and group dims", "[cli]") {
    expect_error("0 channels", ov_conv().file("data.npy", Tensor::zeros({1, 0, 4}, DType::f64)), "data");
    expect_error("0 spatial", ov_conv().file("data.npy", Tensor::zeros({1, 1, 0}, DType::f64)), "data");
    expect_error("0 kernel", ov_conv().file("filter.npy", Tensor::zeros({1, 1, 0}, DType::f64)), "filter");
    expect_error("0 output channels", ov_conv().file("filter.npy", Tensor::zeros({0, 1, 3}, DType::f64)), "filter");
    expect_error("0 groups", ov_group_cbd().file("filter.npy", Tensor::zeros({0, 1, 2, 2}, DType::f64)), "filter");
    expect_error("NXC 0 channels", onednn_ct().file("src.npy", Tensor::zeros({1, 2, 0}, DType::f64)), "src");
}

TEST_CASE("cli 3.5 class 7: channel mismatches and divisibility by groups", "[cli]") {
    expect_error("OV Convolution C 2 vs filter C_IN 1", ov_conv().file("data.npy", Tensor::zeros({1, 2, 4}, DType::f64)),
                 "filter");
    expect_error("OV ConvolutionBackpropData C 2 vs filter C_INPUT 1",
                 ov_cbd().file("data.npy", Tensor::zeros({1, 2, 3}, DType::f64)), "filter");
    // D11: 5 channels, 2 groups of 2 would pass an integer-division check.
    expect_error("GroupConvolution C 5 vs G*I = 4",
                 [] {
                     CaseSpec c = ov_conv();
                     c.doc["op"] = "GroupConvolution";
                     c.file("data.npy", Tensor::zeros({1, 5, 4}, DType::f64)).file("filter.npy", Tensor::zeros({2, 1, 2, 3}, DType::f64));
                     return c;
                 }(),
                 "filter");
    expect_error("GroupConvolutionBackpropData C 3 vs G*C_in_g = 2",
                 ov_group_cbd().file("data.npy", Tensor::zeros({1, 3, 2}, DType::f64)), "filter");
    expect_error("ConvTranspose IC 3 not divisible by groups 2",
                 onednn_ct().file("src.npy", Tensor::zeros({1, 2, 3}, DType::f64)).file("weights.npy", Tensor::zeros({3, 1, 2}, DType::f64)),
                 "groups");
    expect_error("Convolution OC 3 not divisible by groups 2",
                 onednn_conv().attr("groups", 2).file("weights.npy", Tensor::zeros({3, 2, 3}, DType::f64)), "groups");
    expect_error("Convolution IC 4 vs groups*weights_I = 6",
                 onednn_conv().attr("groups", 2).file("weights.npy", Tensor::zeros({2, 3, 3}, DType::f64)), "weights");
    expect_error("ConvolutionBackpropData C_dd 1 vs filter_O 2",
                 onednn_cbd().file("filter.npy", Tensor::zeros({2, 1, 3}, DType::f64)), "filter");
    expect_error("bias of the wrong length",
                 [] {
                     CaseSpec c = onednn_conv();
                     c.doc["inputs"].push_back("bias.npy");
                     c.file("bias.npy", Tensor::zeros({3}, DType::f64));
                     return c;
                 }(),
                 "bias");
}

TEST_CASE("cli 3.5 class 8: bad output_shape", "[cli]") {
    expect_error("2-D output_shape", ov_cbd_shape(Tensor::from({1, 1}, {6}, DType::i64)), "output_shape");
    expect_error("float output_shape", ov_cbd_shape(Tensor::from({1}, {6}, DType::f64)), "output_shape");
    expect_error("f32 output_shape", ov_cbd_shape(Tensor::from({1}, {6}, DType::f32)), "output_shape");
    expect_error("output_shape of length 2 on 1-D data", ov_cbd_shape(ints({6, 6})), "output_shape");
    expect_error("OV output_shape as a full shape", ov_cbd_shape(ints({1, 1, 6})), "output_shape");
    expect_error("empty output_shape", ov_cbd_shape(Tensor::zeros({0}, DType::i64)), "output_shape");
    expect_error("output_shape value 0", ov_cbd_shape(ints({0})), "output_shape");
    expect_error("output_shape value -6 (i32)", ov_cbd_shape(ints({-6}, DType::i32)), "output_shape");
    expect_error("oneDNN full output_shape with N 2", onednn_cbd().file("output_shape.npy", ints({2, 1, 6})), "output_shape");
    expect_error("oneDNN full output_shape with C 2", onednn_cbd().file("output_shape.npy", ints({1, 2, 6})), "output_shape");
    expect_error("oneDNN output_shape of length 2", onednn_cbd().file("output_shape.npy", ints({1, 6})), "output_shape");
    expect_error("oneDNN output_shape attribute as a string",
                 [] {
                     CaseSpec c = onednn_cbd();
                     c.doc["inputs"] = {"output_delta.npy", "filter.npy"};
                     return c.attr("output_shape", "1,1,6");
                 }(),
                 "output_shape");
    expect_error("oneDNN output_shape attribute with a 0",
                 [] {
                     CaseSpec c = onednn_cbd();
                     c.doc["inputs"] = {"output_delta.npy", "filter.npy"};
                     return c.attr("output_shape", {1, 1, 0});
                 }(),
                 "output_shape");
    expect_error("gradient requested for the integer output_shape",
                 with_grads(ov_cbd_shape(ints({6})), Tensor::zeros({1, 1, 6}, DType::f64), {"dd.npy", "df.npy", "ds.npy"}),
                 "grad_inputs");
}

TEST_CASE("cli 3.5 classes 9 and 10: kernel larger than the padded input; Y < 1", "[cli]") {
    // These name the dimension: the kernel on spatial axis 0.
    expect_error("K 5 on X 4", ov_conv().file("filter.npy", Tensor::zeros({1, 1, 5}, DType::f64)), "kernel");
    expect_error("dilated extent 7 on X 4 + pads 2",
                 ov_conv().attr("dilations", {3}).attr("pads_begin", {1}).attr("pads_end", {1}), "dilat");
    expect_error("valid with K 5 on X 4", ov_conv().attr("auto_pad", "valid").file("filter.npy", Tensor::zeros({1, 1, 5}, DType::f64)),
                 "axis 0");
    expect_error("oneDNN ConvTransposeBackwardData K 3 on X 2",
                 [] {
                     CaseSpec c = onednn_ct();
                     c.doc["op"] = "ConvTransposeBackwardData";
                     return c.file("weights.npy", Tensor::zeros({2, 1, 3}, DType::f64));
                 }(),
                 "kernel");
    // Y = s·(X−1) + eff − pb − pe + op = 0 + 1 − 1 − 1 + 0 = −1
    expect_error("OV ConvolutionBackpropData Y = -1",
                 ov_cbd().attr("pads_begin", {1}).attr("pads_end", {1}).file("data.npy", Tensor::zeros({1, 1, 1}, DType::f64))
                     .file("filter.npy", Tensor::zeros({1, 1, 1}, DType::f64)),
                 "pads");
    expect_error("OV ConvolutionBackpropData Y = 0", ov_cbd().attr("strides", {1}).attr("pads_begin", {3}).attr("pads_end", {2}),
                 "pads");
    expect_error("ConvTranspose Y = 0", onednn_ct().attr("pads_begin", {2}).attr("pads_end", {1}), "pads");
}

TEST_CASE("cli 3.5 class 12: oneDNN ConvolutionBackpropData output_shape inconsistent with the forward conv", "[cli]") {
    // OPS.md Example 2: valid gives floor((6-3)/2)+1 = 2, not the 3 of output_delta.
    expect_error("valid", onednn_cbd().attr("auto_pad", "valid"), "output_shape");
    expect_error("explicit pads (0, 0)", onednn_cbd().attr("auto_pad", "explicit").attr("pads_begin", {0}).attr("pads_end", {0}),
                 "output_shape");
    expect_error("same_upper with output_shape 7 (ceil(7/2) = 4)", onednn_cbd().file("output_shape.npy", ints({1, 1, 7})),
                 "output_shape");
    expect_error("output_shape smaller than the kernel",
                 onednn_cbd().attr("auto_pad", "explicit").file("output_shape.npy", ints({1, 1, 2})), "output_shape");
}

TEST_CASE("cli 3.5 class 13: grad_output shape and malformed .npy files", "[cli]") {
    expect_error("grad_output of the wrong shape",
                 with_grads(ov_cbd(), Tensor::zeros({1, 1, 6}, DType::f64), {"dd.npy", "df.npy"}), "grad_output");
    expect_error("grad_output of rank 2", with_grads(ov_cbd(), Tensor::zeros({1, 7}, DType::f64), {"dd.npy", nullptr}),
                 "grad_output");
    expect_error("integer grad_output", with_grads(ov_cbd(), Tensor::zeros({1, 1, 7}, DType::i32), {"dd.npy", nullptr}),
                 "grad_output");
    {
        CaseSpec c = with_grads(ov_cbd(), Tensor::zeros({1, 1, 7}, DType::f64), {"dd.npy", "df.npy"});
        c.bytes("dy.npy", "not an npy");
        expect_error("malformed grad_output file", c, "dy.npy");
    }
    const std::string hdr = "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 3), }";
    expect_error("bad magic", ov_cbd().bytes("data.npy", "NUMPY garbage garbage garbage"), "data.npy");
    expect_error("truncated payload", ov_cbd().bytes("data.npy", npy_bytes(hdr, std::string(16, '\0'))), "data.npy");
    expect_error("truncated header", ov_cbd().bytes("filter.npy", npy_bytes(hdr, std::string(24, '\0')).substr(0, 30)),
                 "filter.npy");
    expect_error("unsupported dtype <u1",
                 ov_cbd().bytes("data.npy", npy_bytes("{'descr': '<u1', 'fortran_order': False, 'shape': (1, 1, 3), }", "abc")),
                 "data.npy");
    expect_error("complex dtype",
                 ov_cbd().bytes("filter.npy", npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1, 1, 3), }", std::string(24, '\0'))),
                 "filter.npy");
    expect_error("an extra header key",
                 ov_cbd().bytes("data.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 3), 'x': 1}", std::string(24, '\0'))),
                 "data.npy");
    expect_error("missing input file", [] { CaseSpec c = ov_cbd(); c.doc["inputs"] = {"nothere.npy", "filter.npy"}; return c; }(),
                 "nothere.npy");
    expect_error("integer first input, no dtype key", ov_cbd().file("data.npy", Tensor::from({1, 1, 3}, {1, 2, 3}, DType::i32)),
                 "dtype");
    {
        CaseSpec c = ov_cbd().file("data.npy", Tensor::from({1, 1, 3}, {1, 2, 3}, DType::i32));
        c.doc["dtype"] = "f64";
        expect_error("integer data with dtype f64", c, "data");
    }
    expect_error("grad_inputs of the wrong length",
                 with_grads(ov_cbd(), Tensor::zeros({1, 1, 7}, DType::f64), {"dd.npy"}), "grad_inputs");
}

TEST_CASE("cli 3.5 class 14: sizes that overflow or cannot be allocated are refused", "[cli]") {
    // [1 << 40] is accepted by the padding rule, but 8 TiB of output must be refused, not allocated.
    expect_error("output_shape [2^40]", ov_cbd_shape(ints({std::int64_t{1} << 40})), "output");
    expect_error("output_shape [2^62]", ov_cbd_shape(ints({std::int64_t{1} << 62})), "output_shape");
    expect_error("oneDNN output_shape [1, 1, 2^40] (inconsistent, then too big)",
                 onednn_cbd().file("output_shape.npy", ints({1, 1, std::int64_t{1} << 40})), "output_shape");
    {
        // 2-D: 2^40 · 2^40 elements overflows int64.
        CaseSpec c = ov_cbd_shape(ints({std::int64_t{1} << 40, std::int64_t{1} << 40}));
        c.file("data.npy", Tensor::zeros({1, 1, 2, 2}, DType::f64)).file("filter.npy", Tensor::zeros({1, 1, 2, 2}, DType::f64));
        c.attr("strides", {2, 2});
        expect_error("output_shape [2^40, 2^40]", c, "output_shape");
    }
    {
        CaseSpec c = ov_cbd().attr("strides", {2, 2}).attr("output_padding", {std::int64_t{1} << 39, std::int64_t{1} << 39});
        c.file("data.npy", Tensor::zeros({1, 1, 2, 2}, DType::f64)).file("filter.npy", Tensor::zeros({1, 1, 2, 2}, DType::f64));
        expect_error("output_padding [2^39, 2^39]: the natural output overflows", c, "output");
    }
    expect_error("output_padding 2^40 (huge natural output)", ov_cbd().attr("output_padding", {std::int64_t{1} << 40}),
                 "output");
    expect_error("output_padding 2^41", onednn_ct().attr("output_padding", {std::int64_t{1} << 41}), "output_padding");
    expect_error("stride 2^62", ov_cbd().attr("strides", {std::int64_t{1} << 62}), "strides");
    expect_error("dilation 2^62", ov_conv().attr("dilations", {std::int64_t{1} << 62}), "dilations");
    expect_error("pads_end 2^62", ov_conv().attr("pads_end", {std::int64_t{1} << 62}), "pads_end");
    expect_error("an .npy header of 2^43 bytes",
                 ov_cbd().bytes("data.npy", npy_header_only("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1099511627776), }")),
                 "data.npy");
    expect_error("an .npy shape whose product overflows",
                 ov_cbd().bytes("filter.npy", npy_header_only("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 1), }")),
                 "filter.npy");
    expect_error("attribute value beyond int64", [] {
        CaseSpec c = ov_cbd();
        c.raw_case = R"({"op": "ConvolutionBackpropData", "attrs": {"strides": [99999999999999999999]},
                         "inputs": ["data.npy", "filter.npy"], "output": "out.npy"})";
        return c;
    }(), "strides");
}

TEST_CASE("cli bad case files: JSON, missing and mistyped keys, bad commands", "[cli]") {
    auto raw = [](const std::string& text) {
        CaseSpec c = ov_cbd();
        c.raw_case = text;
        return c;
    };
    expect_error("truncated JSON", raw(R"({"op": "ConvolutionBackpropData", "inputs": ["data.npy")"), "JSON");
    expect_error("empty file", raw(""), "JSON");
    expect_error("JSON list", raw("[1, 2]"), "object");
    auto without = [](const char* key) {
        CaseSpec c = ov_cbd();
        c.doc.erase(key);
        return c;
    };
    expect_error("missing op", without("op"), "op");
    expect_error("missing inputs", without("inputs"), "inputs");
    expect_error("missing output", without("output"), "output");
    {
        CaseSpec c = ov_cbd();
        c.doc["op"] = 5;
        expect_error("op not a string", c, "op");
    }
    {
        CaseSpec c = ov_cbd();
        c.doc["inputs"] = "data.npy";
        expect_error("inputs not a list", c, "inputs");
    }
    {
        CaseSpec c = ov_cbd();
        c.doc["inputs"] = {"data.npy", 3};
        expect_error("inputs holding a number", c, "inputs");
    }
    {
        CaseSpec c = ov_cbd();
        c.doc["dtype"] = "f8";
        expect_error("unknown dtype", c, "dtype");
        c.doc["dtype"] = "i32";
        expect_error("integer compute dtype", c, "dtype");
    }
    {
        CaseSpec c = ov_cbd();
        c.doc["grad_output"] = "dy.npy";
        c.file("dy.npy", Tensor::zeros({1, 1, 7}, DType::f64));
        expect_error("grad_output without grad_inputs", c, "grad_inputs");
    }
    {
        CaseSpec c = ov_cbd();
        c.doc["grad_inputs"] = {"a.npy", "b.npy"};
        expect_error("grad_inputs without grad_output", c, "grad_inputs");
    }
    expect_error("the same output path twice",
                 with_grads(ov_cbd(), Tensor::zeros({1, 1, 7}, DType::f64), {"out.npy", nullptr}), "out.npy");
    {
        CaseSpec c = ov_cbd();
        c.doc["opset"] = "tensorflow";
        expect_error("explain reports errors the same way", c, "opset", "explain");
    }

    TempDir scratch;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{}, {"run"}, {"frobnicate", "case.json"}, {"run", scratch / "nothere.json"},
          {"run", scratch.path().string()}, {"run", "a.json", "b.json"}}) {
        const CommandResult r = run_tapegrad(args, scratch);
        INFO("args: " << args.size() << " stderr: " << r.err);
        CHECK(r.exit_code == 1);
        CHECK(count_lines(r.err) == 1);
        CHECK(r.err.rfind("error: ", 0) == 0);
    }
}

TEST_CASE("cli writes nothing when a later output cannot be written", "[cli]") {
    // The result is computed and written first; the gradient's folder does not exist.
    expect_error("gradient into a missing folder",
                 with_grads(ov_cbd(), Tensor::zeros({1, 1, 7}, DType::f64), {"no_such_dir/dd.npy", nullptr}), "no_such_dir");
    expect_error("output into a missing folder", [] { CaseSpec c = ov_cbd(); c.doc["output"] = "missing/out.npy"; return c; }(),
                 "missing");
}

TEST_CASE("cli run writes the result and the gradients (OPS.md Example 1, row 3)", "[cli]") {
    CaseSpec c = with_grads(ov_cbd().attr("pads_begin", {1}).attr("pads_end", {1}).attr("output_padding", {0}),
                            Tensor::from({1, 1, 5}, {1, 0, 0, 0, 1}, DType::f64), {"ddata.npy", "dfilter.npy"});
    TempDir work;
    const CommandResult r = run_ok(c, work);
    CHECK(r.out.empty());
    const Tensor out = read_npy(work / "out.npy");
    CHECK(out.dtype() == DType::f64);
    CHECK(out.shape() == Shape{1, 1, 5});
    CHECK(out.values() == V{2, 5, 4, 9, 6});
    CHECK(read_npy(work / "ddata.npy").values() == V{2, 0, 2});
    CHECK(read_npy(work / "dfilter.npy").values() == V{0, 4, 0});
    const std::set<std::string> want{"case.json", "data.npy", "filter.npy", "dy.npy", "out.npy", "ddata.npy", "dfilter.npy"};
    CHECK(work.files() == want);  // no temporaries left behind

    SECTION("a null grad_inputs entry skips that gradient") {
        TempDir w2;
        CaseSpec c2 = c;
        c2.doc["grad_inputs"] = {nullptr, "dfilter.npy"};
        run_ok(c2, w2);
        CHECK_FALSE(fs::exists(w2 / "ddata.npy"));
        CHECK(read_npy(w2 / "dfilter.npy").values() == V{0, 4, 0});
    }
}

TEST_CASE("cli run converts to the compute dtype and writes bf16 as <f4", "[cli]") {
    struct Row {
        const char* dtype;
        DType written;
    };
    for (const Row& row : {Row{"f32", DType::f32}, Row{"f16", DType::f16}, Row{"bf16", DType::f32}, Row{"f64", DType::f64}}) {
        INFO(row.dtype);
        CaseSpec c = ov_group_cbd();
        c.doc["dtype"] = row.dtype;
        TempDir work;
        run_ok(c, work);
        const Tensor out = read_npy(work / "out.npy");
        CHECK(out.dtype() == row.written);
        CHECK(out.values() == V{1, 1, 2, 2, 1, -1, 2, -2, 6, 0, 8, 0, 0, 3, 0, 4});  // OPS.md Example 5
    }
    SECTION("without a dtype key the first input's dtype is used") {
        CaseSpec c = ov_group_cbd();
        c.file("data.npy", Tensor::from({1, 2, 2}, {1, 2, 3, 4}, DType::f32));
        c.file("filter.npy", Tensor::from({2, 1, 2, 2}, {1, 1, 1, -1, 2, 0, 0, 1}, DType::f64));
        TempDir work;
        run_ok(c, work);
        CHECK(read_npy(work / "out.npy").dtype() == DType::f32);
    }
}

TEST_CASE("cli explain prints the resolved pads and output shape (OPS.md Example 2)", "[cli]") {
    {
        TempDir work;
        const CommandResult r = run_ok(ov_cbd_shape(ints({6})).attr("auto_pad", "same_upper"), work, "explain");
        INFO(r.out);
        CHECK_THAT(r.out, Catch::Contains("pads_begin 1"));
        CHECK_THAT(r.out, Catch::Contains("output size 6"));
        CHECK_THAT(r.out, Catch::Contains("output shape [1, 1, 6]"));
        CHECK_FALSE(fs::exists(work / "out.npy"));  // explain computes nothing, writes nothing
    }
    {
        TempDir work;
        const CommandResult r = run_ok(ov_cbd_shape(ints({6})).attr("auto_pad", "same_lower"), work, "explain");
        INFO(r.out);
        CHECK_THAT(r.out, Catch::Contains("pads_begin 0"));
        CHECK_THAT(r.out, Catch::Contains("output shape [1, 1, 6]"));
    }
    {
        TempDir work;
        const CommandResult r = run_ok(onednn_cbd(), work, "explain");  // same_upper, forward SAME on 6: pb = 0
        INFO(r.out);
        CHECK_THAT(r.out, Catch::Contains("pads_begin 0"));
        CHECK_THAT(r.out, Catch::Contains("output shape [1, 1, 6]"));
    }
    {
        TempDir work;
        const CommandResult r = run_ok(ov_conv().attr("strides", {2}).attr("auto_pad", "same_upper"), work, "explain");
        INFO(r.out);  // OPS.md Example 3: pads (0, 1), Yf = 2
        CHECK_THAT(r.out, Catch::Contains("pads_begin 0, pads_end 1"));
        CHECK_THAT(r.out, Catch::Contains("output shape [1, 1, 2]"));
    }
}

TEST_CASE("cli explain works from shapes alone: inline {shape} and {values} inputs", "[cli]") {
    CaseSpec c;
    c.doc = {{"opset", "openvino"},
             {"op", "ConvolutionBackpropData"},
             {"attrs", {{"strides", {2}}, {"auto_pad", "same_upper"}}},
             {"inputs", {{{"shape", {1, 1, 3}}, {"dtype", "f32"}}, {{"shape", {1, 1, 3}}}, {{"values", {6}}}}},
             {"output", "out.npy"}};
    {
        TempDir work;
        const CommandResult r = run_ok(c, work, "explain");
        INFO(r.out);  // OPS.md Example 2, same_upper row: pb = 1
        CHECK_THAT(r.out, Catch::Contains("data [1, 1, 3], filter [1, 1, 3]"));
        CHECK_THAT(r.out, Catch::Contains("pads_begin 1"));
        CHECK_THAT(r.out, Catch::Contains("output shape [1, 1, 6]"));
        CHECK_THAT(r.out, Catch::Contains("dtype f32"));
        CHECK_THAT(r.out, !Catch::Contains("warning:"));
        CHECK(work.files() == std::set<std::string>{"case.json"});
    }
    // gradcheck needs only shapes too
    {
        TempDir work;
        const CommandResult r = run_ok(c, work, "gradcheck");
        CHECK_THAT(r.out, Catch::Contains("all checks passed"));
    }
    // run needs values: a shape-only input is refused, naming it
    expect_error("run refuses a shape-only input", c, "inputs[0] gives only a shape");
    // an inline {values} output_shape is complete: run accepts it
    {
        CaseSpec full = c;
        full.doc["inputs"][0] = "data.npy";
        full.doc["inputs"][1] = "filter.npy";
        full.file("data.npy", Tensor::from({1, 1, 3}, {1, 2, 3})).file("filter.npy", Tensor::from({1, 1, 3}, {1, 2, 3}));
        TempDir work;
        run_ok(full, work);
        CHECK(read_npy(work / "out.npy").values() == V{2, 5, 4, 9, 6, 9});
    }
    // an output_shape given by its shape alone has no values to resolve with
    {
        CaseSpec bad = c;
        bad.doc["inputs"][2] = {{"shape", {1}}, {"dtype", "i64"}};
        expect_error("explain: output_shape without values", bad, "output_shape", "explain");
    }
    // malformed inline entries
    for (const json& entry : {json{{"shape", {1, 1, 3}}, {"values", {1}}}, json{{"values", {1.5}}},
                              json{{"values", {2}}, {"dtype", "f32"}}, json{{"shape", {1, -1, 3}}},
                              json{{"shape", {1, 1, 3}}, {"size", 3}}, json{{"shape", {1, 1, 3}}, {"dtype", "f8"}},
                              json(3), json::object()}) {
        CaseSpec bad = c;
        bad.doc["inputs"][0] = entry;
        expect_error("explain: inline input " + entry.dump(), bad, "inputs[0]", "explain");
    }
}

TEST_CASE("cli explain reads only .npy headers", "[cli]") {
    // A header whose payload is the right size but zeros: explain never looks at the values,
    // and a float input of a few MB costs nothing but its header.
    TempDir work;
    CaseSpec c = ov_conv();
    c.file("data.npy", Tensor::zeros({4, 3, 64, 64}, DType::f32)).file("filter.npy", Tensor::zeros({2, 3, 3, 3}, DType::f32));
    const CommandResult r = run_ok(c, work, "explain");
    CHECK_THAT(r.out, Catch::Contains("output shape [4, 2, 62, 62]"));
}

TEST_CASE("cli explain prints a legend defining every symbol it uses", "[cli]") {
    TempDir work;
    const CommandResult r = run_ok(ov_cbd().attr("pads_begin", {1}).attr("output_padding", {1}), work, "explain");
    INFO(r.out);
    CHECK_THAT(r.out, Catch::Contains("X 3, K 3, s 2, d 1, op 1"));
    CHECK_THAT(r.out, Catch::Contains("legend"));
    for (const char* sym : {"\n  CONV, CONVT ", "\n  G, O_g, I_g ", "\n  X ", "Y: its output size", "\n  K ", "s, d: stride, dilation",
                            "\n  pb, pe ", "\n  op ", "total: pb + pe", "\n  eff ", "\n  L ", "\n  Yo ", "\n  rule "})
        CHECK_THAT(r.out, Catch::Contains(sym));
}

TEST_CASE("cli explain warns about legal but surprising configurations", "[cli]") {
    auto explain = [](const CaseSpec& c) {
        TempDir work;
        return run_ok(c, work, "explain").out;
    };
    {  // output_padding >= stride, and past pads_end: rows no input reaches
        const std::string out = explain(ov_cbd().attr("output_padding", {2}));
        INFO(out);
        CHECK_THAT(out, Catch::Contains("warning: axis 0: output_padding 2 >= stride 2"));
        CHECK_THAT(out, Catch::Contains("warning: axis 0: the last 2 output position(s) (t >= L - pb = 7) lie past the full "
                                        "transposed length L = 7"));
        CHECK_THAT(out, Catch::Contains("output_padding 2 > pads_end 0"));
    }
    {  // output_padding 1 <= pads_end 1: the extra row is a computed value, no zero rows
        const std::string out = explain(ov_cbd().attr("pads_begin", {1}).attr("pads_end", {1}).attr("output_padding", {1}));
        INFO(out);
        CHECK_THAT(out, !Catch::Contains("warning:"));
    }
    {  // pads >= the dilated kernel extent: outputs that see only padding
        const std::string out = explain(ov_conv().attr("pads_begin", {3}).attr("pads_end", {4}));
        INFO(out);
        CHECK_THAT(out, Catch::Contains("warning: axis 0: pads_begin 3 >= eff 3: the first 1 output(s) see only padding"));
        CHECK_THAT(out, Catch::Contains("warning: axis 0: pads_end 4 is so large that the last 2 output(s) see only padding"));
    }
    {  // a requested output_shape beyond the full length (OPS.md Example 2, output_shape [8])
        const std::string out = explain(ov_cbd_shape(ints({8})).attr("auto_pad", "same_upper"));
        INFO(out);
        CHECK_THAT(out, Catch::Contains("the last 1 output position(s)"));
        CHECK_THAT(out, Catch::Contains("the requested output size 8 runs past L - pb = 7"));
    }
    {  // stride larger than the kernel: gaps
        const std::string out = explain(ov_cbd().attr("strides", {4}));
        INFO(out);
        CHECK_THAT(out, Catch::Contains("warning: axis 0: stride 4 > eff 3"));
    }
    {  // output_padding that the op ignores
        const std::string out = explain(onednn_cbd().attr("output_padding", {1}));
        INFO(out);
        CHECK_THAT(out, Catch::Contains("output_padding 1 is validated but has no effect"));
    }
}

// ---- tapegrad bench ---------------------------------------------------------------------

namespace {

// Two tiny transposed convolutions in the format of bench/shapes.json: a 1-D one
// whose own layout is NXC, and a grouped 2-D one without a layout key (NCX).
json bench_shapes() {
    return {{"comment", "test shapes"},
            {"shapes",
             {{{"name", "t1d"}, {"note", "1-D, k4 s2 p1"}, {"dims", 1}, {"N", 3}, {"C_in", 4}, {"C_out", 2},
               {"groups", 1}, {"input", {6}}, {"kernel", {4}}, {"strides", {2}}, {"pads_begin", {1}},
               {"pads_end", {1}}, {"dilations", {1}}, {"output_padding", {0}}, {"layout", "NXC"}},
              {{"name", "t2d"}, {"dims", 2}, {"N", 1}, {"C_in", 4}, {"C_out", 6}, {"groups", 2},
               {"input", {3, 4}}, {"kernel", {3, 2}}, {"strides", {2, 1}}, {"pads_begin", {1, 0}},
               {"pads_end", {0, 0}}, {"dilations", {1, 2}}, {"output_padding", {1, 0}}}}}};
}

// 2·N·C_in·(C_out/groups)·∏kernel·∏input for the shapes above at batch N.
double bench_flops(const std::string& shape, double N) {
    return shape == "t1d" ? 2 * N * 4 * 2 * 4 * 6 : 2 * N * 4 * 3 * (3 * 2) * (3 * 4);
}

struct BenchRun {
    CommandResult r;
    std::vector<json> rows;
};

BenchRun run_bench(const json& shapes, std::vector<std::string> args) {
    TempDir dir;
    write_bytes(dir / "shapes.json", shapes.dump());
    args.insert(args.begin(), {"bench", "--shapes", dir / "shapes.json", "--min-time", "0.01"});
    BenchRun b;
    b.r = run_tapegrad(args, dir);
    INFO("stderr: " << b.r.err << "\nstdout: " << b.r.out);
    CHECK(b.r.exit_code == 0);
    CHECK(b.r.err.empty());
    if (std::find(args.begin(), args.end(), "--json") == args.end()) return b;
    std::istringstream lines(b.r.out);
    for (std::string line; std::getline(lines, line);) {
        json j;
        REQUIRE_NOTHROW(j = json::parse(line));  // only JSON on stdout
        b.rows.push_back(j);
    }
    return b;
}

// One row of `--json`: exactly the nine keys, plausible numbers.
void check_row(const json& j, const std::string& shape, const std::string& op, const std::string& dtype,
               const std::string& layout, std::int64_t batch) {
    INFO(j.dump());
    REQUIRE(j.is_object());
    std::set<std::string> keys;
    for (const auto& [k, v] : j.items()) keys.insert(k);
    CHECK(keys == std::set<std::string>{"shape", "op", "dtype", "layout", "threads", "batch", "median_ms", "gflops",
                                        "extra_bytes"});
    CHECK(j["shape"] == shape);
    CHECK(j["op"] == op);
    CHECK(j["dtype"] == dtype);
    CHECK(j["layout"] == layout);
    CHECK(j["batch"] == batch);
    REQUIRE(j["threads"].is_number_integer());
    CHECK(j["threads"].get<int>() >= 1);
    REQUIRE(j["median_ms"].is_number());
    REQUIRE(j["gflops"].is_number());
    const double ms = j["median_ms"], gf = j["gflops"];
    CHECK(ms > 0);
    CHECK(gf > 0);
    CHECK(gf == Approx(bench_flops(shape, static_cast<double>(batch)) / (ms * 1e6)).epsilon(1e-9));
    REQUIRE(j["extra_bytes"].is_number_integer());
    CHECK(j["extra_bytes"].get<std::int64_t>() >= 0);
}

void expect_bench_error(const std::string& label, const json& shapes, std::vector<std::string> args,
                        const std::vector<std::string>& must_name, bool with_shapes = true) {
    TempDir dir;
    write_bytes(dir / "shapes.json", shapes.dump());
    if (with_shapes) args.insert(args.begin(), {"--shapes", dir / "shapes.json"});
    args.insert(args.begin(), "bench");
    const CommandResult r = run_tapegrad(args, dir);
    INFO(label << "\n  stderr: " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.rfind("error: ", 0) == 0);
    for (const std::string& name : must_name) CHECK_THAT(r.err, Catch::Contains(name));
    CHECK(r.out.empty());
}

}  // namespace

TEST_CASE("cli bench --json: one line per (shape, op), all three ops by default, --batch", "[cli][bench]") {
    const BenchRun b = run_bench(bench_shapes(), {"--only", "t2d", "--batch", "2", "--json"});
    REQUIRE(b.rows.size() == 3);
    check_row(b.rows[0], "t2d", "fwd", "f32", "NCX", 2);
    check_row(b.rows[1], "t2d", "bwd_data", "f32", "NCX", 2);
    check_row(b.rows[2], "t2d", "bwd_weights", "f32", "NCX", 2);
}

TEST_CASE("cli bench --json with --ops, --dtype bf16, --layout NXC and --threads", "[cli][bench]") {
    const BenchRun b = run_bench(bench_shapes(), {"--ops", "bwd_data", "--dtype", "bf16", "--layout", "NXC", "--threads",
                                                  "1", "--batch", "2", "--json"});
    REQUIRE(b.rows.size() == 2);  // every shape of the file, one op
    check_row(b.rows[0], "t1d", "bwd_data", "bf16", "NXC", 2);
    check_row(b.rows[1], "t2d", "bwd_data", "bf16", "NXC", 2);
    CHECK(b.rows[0]["threads"] == 1);
    CHECK(b.rows[1]["threads"] == 1);
}

TEST_CASE("cli bench --clock cpu times one thread by CPU time", "[cli][bench]") {
    const BenchRun b =
        run_bench(bench_shapes(), {"--only", "t2d", "--ops", "fwd", "--threads", "1", "--clock", "cpu", "--batch", "2", "--json"});
    REQUIRE(b.rows.size() == 1);
    check_row(b.rows[0], "t2d", "fwd", "f32", "NCX", 2);
}

TEST_CASE("cli bench prints a table; a shape's own layout is the default", "[cli][bench]") {
    const BenchRun b = run_bench(bench_shapes(), {"--only", "t1d", "--ops", "bwd_weights", "--dtype", "f16"});
    INFO(b.r.out);
    REQUIRE(count_lines(b.r.out) == 2);  // header + one row
    const std::string row = b.r.out.substr(b.r.out.find('\n') + 1);
    for (const char* col : {"shape", "op", "dtype", "layout", "threads", "batch", "median ms", "GFLOP/s", "extra MiB"})
        CHECK_THAT(b.r.out.substr(0, b.r.out.find('\n')), Catch::Contains(col));
    std::istringstream cells(row);
    std::string shape, op, dtype, layout, threads, batch;
    double ms = 0, gf = 0, mib = -1;
    cells >> shape >> op >> dtype >> layout >> threads >> batch >> ms >> gf >> mib;
    CHECK(shape == "t1d");
    CHECK(op == "bwd_weights");
    CHECK(dtype == "f16");
    CHECK(layout == "NXC");  // from the shape's "layout" key
    CHECK(batch == "3");     // the shape's own N
    CHECK(ms > 0);
    CHECK(gf > 0);
    CHECK(mib >= 0);
}

TEST_CASE("cli bench: bad options, one error line naming the option and its value", "[cli][bench]") {
    const json s = bench_shapes();
    expect_bench_error("unknown option", s, {"--frobnicate"}, {"--frobnicate"});
    expect_bench_error("a stray argument", s, {"t1d"}, {"t1d"});
    expect_bench_error("missing value", s, {"--threads"}, {"--threads"});
    expect_bench_error("missing value of --shapes", s, {"--shapes"}, {"--shapes"}, false);
    expect_bench_error("no --shapes", s, {"--json"}, {"--shapes"}, false);
    expect_bench_error("threads not an integer", s, {"--threads", "two"}, {"--threads", "two"});
    expect_bench_error("threads 0", s, {"--threads", "0"}, {"--threads", "'0'"});
    expect_bench_error("threads with a suffix", s, {"--threads", "2x"}, {"--threads", "2x"});
    expect_bench_error("batch negative", s, {"--batch", "-1"}, {"--batch", "-1"});
    expect_bench_error("batch fractional", s, {"--batch", "1.5"}, {"--batch", "1.5"});
    expect_bench_error("batch too large for int", s, {"--batch", "99999999999"}, {"--batch", "99999999999"});
    expect_bench_error("unknown op", s, {"--ops", "fwd,bwd"}, {"--ops", "bwd"});
    expect_bench_error("empty op", s, {"--ops", "fwd,"}, {"--ops", "fwd,"});
    expect_bench_error("unknown dtype", s, {"--dtype", "f64"}, {"--dtype", "f64"});
    expect_bench_error("unknown layout", s, {"--layout", "NHWC"}, {"--layout", "NHWC"});
    expect_bench_error("bad --min-time", s, {"--min-time", "soon"}, {"--min-time", "soon"});
    expect_bench_error("unknown clock", s, {"--clock", "tsc", "--threads", "1"}, {"--clock", "tsc"});
    expect_bench_error("cpu clock without one thread", s, {"--clock", "cpu"}, {"--clock", "--threads 1"});
    expect_bench_error("--only naming no shape", s, {"--only", "resnet"}, {"--only", "resnet"});
    TempDir dir;
    expect_bench_error("missing shapes file", s, {"--shapes", dir / "nothere.json"}, {"--shapes", "nothere.json"}, false);
    expect_bench_error("shapes file is a folder", s, {"--shapes", dir.path().string()}, {"--shapes"}, false);
    write_bytes(dir / "bad.json", R"({"shapes": [{"name": "x")");
    expect_bench_error("malformed JSON", s, {"--shapes", dir / "bad.json"}, {"--shapes", "bad.json", "JSON"}, false);
    expect_bench_error("no shapes list", json{{"comment", "x"}}, {}, {"--shapes", "shapes"});
    expect_bench_error("empty shapes list", json{{"shapes", json::array()}}, {}, {"--shapes", "no shape"});
}

TEST_CASE("cli bench: every field of every shape is checked, errors name the shape and the key", "[cli][bench]") {
    auto with = [](const char* key, json v, int shape = 1) {
        json s = bench_shapes();
        s["shapes"][shape][key] = std::move(v);
        return s;
    };
    auto without = [](const char* key) {
        json s = bench_shapes();
        s["shapes"][1].erase(key);
        return s;
    };
    for (const char* key : {"dims", "N", "C_in", "C_out", "groups", "input", "kernel", "strides", "pads_begin", "pads_end",
                            "dilations", "output_padding"})
        expect_bench_error(std::string("missing ") + key, without(key), {}, {"t2d", key, "missing"});
    for (const char* key : {"dims", "C_out", "kernel", "pads_end"})  // integers and lists, read by the same code
        expect_bench_error(std::string("string ") + key, with(key, "3"), {}, {"t2d", key});
    expect_bench_error("missing name", without("name"), {}, {"#1", "name"});
    expect_bench_error("name not a string", with("name", 7), {}, {"#1", "name"});
    expect_bench_error("two shapes of one name", with("name", "t1d"), {}, {"t1d", "name"});
    expect_bench_error("shape not an object", [] { json s = bench_shapes(); s["shapes"][1] = 5; return s; }(), {}, {"shapes[1]"});
    expect_bench_error("N = 0", with("N", 0), {}, {"t2d", "'N'", ">= 1"});
    expect_bench_error("N fractional", with("N", 1.5), {}, {"t2d", "'N'", "integer"});
    expect_bench_error("C_in negative", with("C_in", -4), {}, {"t2d", "C_in"});
    expect_bench_error("C_out = 0", with("C_out", 0), {}, {"t2d", "C_out"});
    expect_bench_error("groups = 0", with("groups", 0), {}, {"t2d", "groups"});
    expect_bench_error("groups not dividing C_in", with("groups", 3), {}, {"t2d", "groups", "C_in"});
    expect_bench_error("groups not dividing C_out", with("groups", 4), {}, {"t2d", "groups", "C_out"});
    expect_bench_error("dims = 0", with("dims", 0), {}, {"t2d", "dims"});
    expect_bench_error("kernel too short", with("kernel", {3}), {}, {"t2d", "kernel", "dims"});
    expect_bench_error("strides too long", with("strides", {1, 1, 1}), {}, {"t2d", "strides"});
    expect_bench_error("input holding 0", with("input", {3, 0}), {}, {"t2d", "input"});
    expect_bench_error("kernel holding a float", with("kernel", {3, 2.5}), {}, {"t2d", "kernel"});
    expect_bench_error("stride 0", with("strides", {0, 1}), {}, {"t2d", "strides"});
    expect_bench_error("dilation 0", with("dilations", {1, 0}), {}, {"t2d", "dilations"});
    expect_bench_error("negative pad", with("pads_end", {0, -1}), {}, {"t2d", "pads_end"});
    expect_bench_error("negative output_padding", with("output_padding", {-1, 0}), {}, {"t2d", "output_padding"});
    expect_bench_error("pads leave no output", with("pads_begin", {9, 0}), {}, {"t2d", "pads_begin"});
    expect_bench_error("bad layout key", with("layout", "NHWC"), {}, {"t2d", "layout"});
    expect_bench_error("a bad shape is refused even when --only names another", with("N", 0), {"--only", "t1d"},
                       {"t2d", "'N'"});
    expect_bench_error("an output over 4 GiB", with("input", {1 << 20, 1 << 20}), {}, {"t2d", "input", "limit"});
}
