// Helpers shared by the oneDNN Graph opset tests (test_onednn.cpp, test_onednn_lowp.cpp):
// the five oneDNN ops described as data, layout permutes done by hand (Tensor::permute),
// and filter relayouts written from OPS.md section 6 independently of ops/opset.cpp.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tensor_helpers.hpp"
#include "tapegrad/core/tensor.hpp"
#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_kernels.hpp"
#include "tapegrad/spec/opset.hpp"

namespace tg::onednn_test {

using IntList = std::vector<std::int64_t>;




inline Tensor shape_input(const IntList& v) {
    return Tensor::from({static_cast<std::int64_t>(v.size())}, std::vector<double>(v.begin(), v.end()), DType::i64);
}


using testing::abs_tensor;
using testing::dot;
using testing::max_abs_diff;
using testing::random_tensor;

inline const char* layout_name(Layout l) { return l == Layout::NCX ? "NCX" : "NXC"; }

// NCX <-> NXC by hand: [N, C, X...] -> [N, X..., C] and back.
inline Tensor to_layout(const Tensor& ncx, Layout l) {
    if (l == Layout::NCX) return ncx;
    std::vector<int> axes{0};
    for (int a = 2; a < ncx.ndim(); ++a) axes.push_back(a);
    axes.push_back(1);
    return ncx.permute(axes).contiguous();
}
inline Tensor to_ncx(const Tensor& t, Layout l) {
    if (l == Layout::NCX) return t;
    std::vector<int> axes{0, t.ndim() - 1};
    for (int a = 1; a < t.ndim() - 1; ++a) axes.push_back(a);
    return t.permute(axes).contiguous();
}

// The stored forms of a channel-first filter array cf = [A, B, K...] (OPS.md section 6, with
// A = G·O_g the o-side channels and B = I_g):
//   AB   OIX (Convolution, ConvolutionBackpropData) and IOX (ConvTranspose family): cf itself
//   XBA  XIO / XOI: [K..., B, A]
//   BA   old OIX of ConvTransposeBackpropData: [B, A, K...]
//   XAB  old XIO of ConvTransposeBackpropData: [K..., A, B]
enum class FilterLayout { AB, XBA, BA, XAB };

inline Tensor store_filter(const Tensor& cf, FilterLayout f) {
    const int D = cf.ndim() - 2;
    std::vector<int> axes;
    switch (f) {
        case FilterLayout::AB: return cf;
        case FilterLayout::BA:
            axes = {1, 0};
            for (int a = 0; a < D; ++a) axes.push_back(a + 2);
            break;
        case FilterLayout::XBA:
        case FilterLayout::XAB:
            for (int a = 0; a < D; ++a) axes.push_back(a + 2);
            if (f == FilterLayout::XBA) { axes.push_back(1); axes.push_back(0); }
            else { axes.push_back(0); axes.push_back(1); }
            break;
    }
    return cf.permute(axes).contiguous();
}

// The inverse of store_filter: a stored filter back to channel-first [A, B, K...].
inline Tensor load_filter(const Tensor& stored, FilterLayout f) {
    const int D = stored.ndim() - 2;
    std::vector<int> axes;
    switch (f) {
        case FilterLayout::AB: return stored;
        case FilterLayout::BA:
            axes = {1, 0};
            for (int a = 0; a < D; ++a) axes.push_back(a + 2);
            break;
        case FilterLayout::XBA: axes = {D + 1, D}; for (int a = 0; a < D; ++a) axes.push_back(a); break;
        case FilterLayout::XAB: axes = {D, D + 1}; for (int a = 0; a < D; ++a) axes.push_back(a); break;
    }
    return stored.permute(axes).contiguous();
}

// One oneDNN op as the tests see it (OPS.md sections 3.2, 5 and 6).
struct OneDnnOp {
    std::string name;
    bool transposed;          // CONVT (data input on the o-side) or CONV (data input on the i-side)
    std::string format_attr;  // weights_format or filter_format
    std::string formats[2];   // the second is the default
    FilterLayout layouts[2];
    bool has_bias;
    bool has_output_padding;
    bool needs_output_shape;
};

inline const std::vector<OneDnnOp>& onednn_ops() {
    using F = FilterLayout;
    static const std::vector<OneDnnOp> ops = {
        {"Convolution", false, "weights_format", {"OIX", "XIO"}, {F::AB, F::XBA}, true, false, false},
        {"ConvTranspose", true, "weights_format", {"IOX", "XOI"}, {F::AB, F::XBA}, true, true, false},
        {"ConvolutionBackpropData", true, "filter_format", {"OIX", "XIO"}, {F::AB, F::XBA}, false, true, true},
        {"ConvTransposeBackpropData", false, "filter_format", {"OIX", "XIO"}, {F::BA, F::XAB}, false, true, false},
        {"ConvTransposeBackwardData", false, "weights_format", {"IOX", "XOI"}, {F::AB, F::XBA}, false, true, false},
    };
    return ops;
}

inline const OneDnnOp& onednn_op(const std::string& name) {
    for (const OneDnnOp& o : onednn_ops())
        if (o.name == name) return o;
    FAIL("no oneDNN op " << name);
    return onednn_ops().front();
}

inline Tensor run(const std::string& opset, const std::string& op, const Attrs& attrs, const std::vector<Tensor>& in) {
    const ResolvedOp r = resolve_op(opset, op, attrs, in);
    Tensor y = run_op(r, in);
    REQUIRE(y.shape() == r.result_shape);
    return y;
}

// The key of the error resolve_op raises, or "(no error)".
inline std::string error_key(const std::string& opset, const std::string& op, const Attrs& attrs,
                             const std::vector<Tensor>& in) {
    try {
        resolve_op(opset, op, attrs, in);
    } catch (const Error& e) {
        return e.key();
    }
    return "(no error)";
}

}  // namespace tg::onednn_test
