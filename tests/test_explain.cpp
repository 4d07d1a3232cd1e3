// explain from C++ (tapegrad/ops/conv_explain.hpp, nn::Conv::explain, nn::ConvTranspose::explain):
// the numbers and sizes computed by hand, the warnings, and the same text as `tapegrad
// explain` prints for the equivalent case file (one implementation).
#include <catch2/catch.hpp>

#include <sstream>

#include "support_files.hpp"
#include "tapegrad/tapegrad.hpp"

using namespace tg;
using namespace tg::testsov;

TEST_CASE("explain: a transposed layer's axis, by hand", "[explain]") {
    // k3 s2 padding 1 output_padding 1 on X = 3: L = 2·2 + 3 = 7, Y = 7 − 1 − 1 + 1 = 6.
    nn::ConvTranspose up(2, 3, nn::ConvOptions{3}.stride(2).padding(1).output_padding(1));
    const ConvExplanation e = up.explain({4, 2, 3});
    CHECK(e.transposed);
    CHECK(e.input == Shape{4, 2, 3});
    CHECK(e.output == Shape{4, 3, 6});
    CHECK(e.output == up(ag::constant(Tensor::zeros({4, 2, 3}))).shape());
    CHECK(e.weight == Shape{1, 2, 3, 3});
    REQUIRE(e.axes.size() == 1);
    const ConvAxisExplanation& a = e.axes[0];
    CHECK(a.X == 3);
    CHECK(a.eff == 3);
    CHECK(a.L == 7);
    CHECK(a.pb == 1);
    CHECK(a.pe == 1);
    CHECK(a.op == 1);
    CHECK(a.Y == 6);
    CHECK(a.numbers() == "X 3, K 3, s 2, d 1, op 1");
    CHECK(a.result() == "pads_begin 1, pads_end 1, full length L 7, total padding 2, output size 6");
    CHECK(a.formula == "eff = d*(K-1) + 1 = 1*(3-1) + 1 = 3; L = s*(X-1) + eff = 2*(3-1) + 3 = 7; "
                       "Y = L - pb - pe + op = 7 - 1 - 1 + 1 = 6");
    CHECK(e.warnings.empty());  // output_padding 1 <= pads_end 1: every position is computed
}

TEST_CASE("explain: a forward layer's padding-only outputs and unread inputs, 2-D", "[explain]") {
    // Axis 0: K 3, padding 3 on X = 5: Y = (5 + 6 − 3)/1 + 1 = 9; the first output sees
    // only padding (pb 3 >= eff 3), and the last (9 − max(1, ceil(8/1) = 8) = 1).
    // Axis 1: the same with stride 4 and padding 0 on X = 9: Y = (9 − 3)/4 + 1 = 2, 1 of
    // every 4 input positions is never read.
    nn::Conv conv(1, 1, nn::ConvOptions{3, 3}.stride({1, 4}).padding({3, 0}));
    const ConvExplanation e = conv.explain({1, 1, 5, 9});
    CHECK(!e.transposed);
    CHECK(e.output == Shape{1, 1, 9, 2});
    CHECK(e.axes[0].Y == 9);
    CHECK(e.axes[1].Y == 2);
    CHECK(e.axes[0].formula == "eff = d*(K-1) + 1 = 1*(3-1) + 1 = 3; Y = floor((X + pb + pe - eff)/s) + 1 = "
                               "floor((5 + 3 + 3 - 3)/1) + 1 = 9");
    REQUIRE(e.warnings.size() == 3);
    CHECK(e.warnings[0] == "axis 0: pads_begin 3 >= eff 3: the first 1 output(s) see only padding (0, or the bias)");
    CHECK(e.warnings[1] == "axis 0: pads_end 3 is so large that the last 1 output(s) see only padding (0, or the bias)");
    CHECK(e.warnings[2] == "axis 1: stride 4 > eff 3: 1 of every 4 input positions are never read (their gradient is 0)");
    std::ostringstream text;
    text << e;
    CHECK_THAT(text.str(), Catch::StartsWith("CONV: forward convolution, layout NCX, groups 1\n") &&
                               Catch::Contains("  axis 1: X 9, K 3, s 4, d 1\n") &&
                               Catch::Contains("  output shape [1, 1, 9, 2]\nwarning: axis 0: pads_begin 3"));
    CHECK_THROWS_WITH(conv.explain({1, 2, 5, 9}), Catch::Contains("Conv: input [1, 2, 5, 9]"));
    const ConvGeometry g = conv.geometry({1, 1, 5, 9});
    CHECK_THROWS_WITH(explain(g, ExplainOptions{{1, 1}, false}), Catch::Contains("output_padding is given for a forward"));
}

TEST_CASE("explain: the C++ explanation and `tapegrad explain` print the same lines", "[explain][cli]") {
    // nn::ConvTranspose(1, 1, k3 s2 output_padding 1) on [1, 1, 3] is OpenVINO's
    // ConvolutionBackpropData with strides [2], pads 0 and output_padding [1]: Y = 8, the
    // last position past L = 7.
    nn::ConvTranspose up(1, 1, nn::ConvOptions{3}.stride(2).output_padding(1));
    const ConvExplanation e = up.explain({1, 1, 3});
    REQUIRE(e.warnings.size() == 1);
    TempDir dir;
    write_bytes(dir / "case.json", R"({"op": "ConvolutionBackpropData", "attrs": {"strides": [2], "output_padding": [1]},
        "inputs": [{"shape": [1, 1, 3], "dtype": "f32"}, {"shape": [1, 1, 3]}], "output": "out.npy"})");
    const CommandResult r = run_tapegrad({"explain", dir / "case.json"}, dir);
    REQUIRE(r.exit_code == 0);
    INFO(r.out);
    CHECK_THAT(r.out, Catch::Contains("    " + e.axes[0].numbers() + "\n"));
    CHECK_THAT(r.out, Catch::Contains("    -> " + e.axes[0].result() + "\n"));
    CHECK_THAT(r.out, Catch::Contains("warning: " + e.warnings[0] + "\n"));
    CHECK_THAT(r.out, Catch::Contains("output shape " + shape_str(e.output)));
}
