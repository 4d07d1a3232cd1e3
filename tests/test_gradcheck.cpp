// The checks must fail, with the right report, when a backward is wrong. The broken ops
// below exist only here; each is recorded with record() exactly as a library op would be.
// Plus `tapegrad gradcheck` on a case file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "tensor_helpers.hpp"
#include "tapegrad/autograd/conv.hpp"
#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/core/npy.hpp"
#include "tapegrad/ops/conv_kernels.hpp"
#include "tapegrad/ops/elementwise.hpp"

using namespace tg;
using namespace tg::ag;

namespace {

// Away from 0: the ratios below are well defined.
Tensor positive_rnd(const Shape& s, std::uint64_t seed) { return testing::rnd(s, seed, 0.5, 1.5); }

// x² with the backward 3x·g instead of 2x·g.
Variable bad_square(const Variable& x) {
    return record("bad_square", binary_op(BinaryOp::Mul, x.value(), x.value()), {x}, {.inputs = {0}, .output = false},
                  [](const SavedContext& c, const Variable& g) -> Grads { return {g * c.input(0) * 3.0}; });
}

// x³ whose backward is right but computed outside the tape (a constant): the first
// derivative is correct, the second is lost.
Variable detached_cube(const Variable& x) {
    const Tensor v = x.value();
    std::vector<double> y = v.values();
    for (double& e : y) e = e * e * e;
    return record("detached_cube", Tensor::from(v.shape(), y, DType::f64), {x}, {.inputs = {0}, .output = false},
                  [](const SavedContext& c, const Variable& g) -> Grads {
                      const Variable x = c.input(0);
                      return {g * constant((x * x * 3.0).value())};
                  });
}

// CONV whose data gradient moves one unit of padding from the beginning to the end of
// axis 0 (a geometry of the same sizes): the right shape, the wrong adjoint.
Variable shifted_conv(const Variable& x, const Variable& W, const ConvGeometry& g) {
    return record("shifted_conv", conv_forward(x.value(), W.value(), g), {x, W}, {.inputs = {0, 1}, .output = false},
                  [g](const SavedContext& c, const Variable& gy) -> Grads {
                      ConvGeometry h = g;
                      h.pad_begin[0] -= 1;
                      h.pad_end[0] += 1;
                      return {conv_transpose(gy, c.input(1), h), conv_weight_grad(c.input(0), gy, g)};
                  });
}

// CONV with correct gradients computed by raw kernels (not recorded): no double backward.
Variable raw_backward_conv(const Variable& x, const Variable& W, const ConvGeometry& g) {
    return record("raw_backward_conv", conv_forward(x.value(), W.value(), g), {x, W},
                  {.inputs = {0, 1}, .output = false}, [g](const SavedContext& c, const Variable& gy) -> Grads {
                      return {constant(conv_transposed(gy.value(), c.input(1).value(), g)),
                              constant(tg::conv_weight_grad(c.input(0).value(), gy.value(), g))};
                  });
}

// [2, 4, 5, 4] -> [2, 2, 3, 2], groups 2, kernel 3x2, stride (2, 1), dilation (1, 2).
ConvGeometry small_geometry() {
    return ConvGeometry::forward({.N = 2, .C_in = 4, .C_out = 2, .groups = 2, .in_size = {5, 4}, .kernel = {3, 2},
                                  .stride = {2, 1}, .dilation = {1, 2}, .pads_begin = {1, 0}, .pads_end = {0, 0}});
}

const CheckRow& row_of(const CheckReport& r, const std::string& tensor) {
    for (const CheckRow& row : r.rows)
        if (row.tensor == tensor) return row;
    FAIL("no row for " << tensor << "\n" << r.table());
    throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("gradcheck reports the worst element of a wrong backward", "[gradcheck]") {
    const Tensor x = positive_rnd({2, 3}, 1);
    const Function f = [](const std::vector<Variable>& v) { return bad_square(v[0]); };
    CheckOptions opt;
    opt.names = {"x"};
    const CheckReport r = gradcheck(f, {x}, opt);
    INFO(r.table());
    REQUIRE_FALSE(r.ok);
    const CheckRow& row = row_of(r, "x");
    CHECK_FALSE(row.ok);
    CHECK(row.check == "gradcheck");
    CHECK(row.checked == 6);
    REQUIRE(row.index.size() == 2);
    // analytic 3x·v against numeric 2x·v, whatever v is
    CHECK(row.a / row.b == Approx(1.5).epsilon(1e-6));
    CHECK(row.abs_err == Approx(std::fabs(row.a - row.b)));
    CHECK(row.rel_err == Approx(0.5).epsilon(1e-6));
    const std::string msg = r.failures();
    CHECK_THAT(msg, Catch::Contains("gradcheck x at " + shape_str(row.index)));
    CHECK_THAT(r.table(), Catch::Contains("FAIL"));
    // the same function with a correct backward passes
    CHECK(gradcheck([](const std::vector<Variable>& v) { return v[0] * v[0]; }, {x}, opt).ok);
}

TEST_CASE("gradgradcheck catches a backward that is right but not differentiable", "[gradcheck]") {
    const Tensor x = positive_rnd({4}, 2);
    const Function f = [](const std::vector<Variable>& v) { return detached_cube(v[0]); };
    CheckOptions opt;
    opt.names = {"x"};
    CHECK(gradcheck(f, {x}, opt).ok);
    const CheckReport r = gradgradcheck(f, {x}, opt);
    INFO(r.table());
    REQUIRE_FALSE(r.ok);
    const CheckRow& rx = row_of(r, "x");
    CHECK_FALSE(rx.ok);
    CHECK(rx.a == 0);  // the tape sees no dependence on x
    CHECK(std::fabs(rx.b) > 0.1);  // ∂(3x²v)/∂x = 6xv
    CHECK(row_of(r, "grad_output").ok);  // linear in v: that part is right
    CHECK_THAT(r.failures(), Catch::Contains("gradgradcheck x at"));

    // the conv version of the same mistake
    const ConvGeometry g = small_geometry();
    const Function fc = [g](const std::vector<Variable>& v) { return raw_backward_conv(v[0], v[1], g); };
    const std::vector<Tensor> in{positive_rnd(g.in_shape(), 3), positive_rnd(g.weight_shape(), 4)};
    opt.names = {"x", "W"};
    opt.max_elements = 16;
    CHECK(gradcheck(fc, in, opt).ok);
    CHECK(check_adjoint(fc, in, 0, opt).ok);
    const CheckReport rc = gradgradcheck(fc, in, opt);
    INFO(rc.table());
    CHECK_FALSE(rc.ok);
    CHECK_FALSE(row_of(rc, "x").ok);
    CHECK_FALSE(row_of(rc, "W").ok);
}

TEST_CASE("check_adjoint and gradcheck catch a wrong transpose; the other argument stays correct", "[gradcheck]") {
    const ConvGeometry g = small_geometry();
    const Function f = [g](const std::vector<Variable>& v) { return shifted_conv(v[0], v[1], g); };
    const std::vector<Tensor> in{positive_rnd(g.in_shape(), 5), positive_rnd(g.weight_shape(), 6)};
    CheckOptions opt;
    opt.names = {"x", "W"};
    const CheckReport adj_x = check_adjoint(f, in, 0, opt);
    INFO(adj_x.table());
    CHECK_FALSE(adj_x.ok);
    CHECK(adj_x.rows[0].abs_err > 1e3 * adj_x.rows[0].tol);
    CHECK_THAT(adj_x.failures(), Catch::Contains("adjoint x"));
    CHECK(check_adjoint(f, in, 1, opt).ok);
    const CheckReport gc = gradcheck(f, in, opt);
    CHECK_FALSE(row_of(gc, "x").ok);
    CHECK(row_of(gc, "W").ok);
    // and the real conv passes all three
    const Function good = [g](const std::vector<Variable>& v) { return conv(v[0], v[1], g); };
    CHECK(check_adjoint(good, in, 0, opt).ok);
    CHECK(gradcheck(good, in, opt).ok);
    opt.max_elements = 16;
    CHECK(gradgradcheck(good, in, opt).ok);
}

TEST_CASE("check_adjoint reports a map that is not linear instead of a bare FAIL", "[gradcheck]") {
    CheckOptions opt;
    opt.names = {"x", "W"};
    const Tensor x = positive_rnd({2, 3, 4}, 21);
    const std::vector<std::pair<std::string, Function>> nonlinear = {
        {"square", [](const std::vector<Variable>& v) { return v[0] * v[0]; }},
        {"relu (positively homogeneous, caught by a < 0)", [](const std::vector<Variable>& v) { return relu(v[0]); }},
        {"affine", [](const std::vector<Variable>& v) { return v[0] * 2.0 + 1.0; }},
    };
    for (const auto& [what, f] : nonlinear) {
        const CheckReport r = check_adjoint(f, {x}, 0, opt);
        INFO(what << "\n" << r.table());
        CHECK_FALSE(r.ok);
        REQUIRE(r.rows.size() == 1);  // the identity is not evaluated
        CHECK(r.rows[0].check == "linearity");
        CHECK_THAT(r.rows[0].note, Catch::StartsWith("not linear in input 0 (x): f("));
        CHECK_THAT(r.rows[0].note, Catch::Contains("max diff"));
        CHECK_THAT(r.table(), Catch::Contains("-> not linear in input 0 (x)"));
        CHECK_THAT(r.failures(), Catch::Contains("linearity x: not linear in input 0 (x)"));
    }
    // a conv with a non-zero bias is affine in its data, not linear; with the bias at zero it passes
    const ConvGeometry g = small_geometry();
    const std::vector<Tensor> in{positive_rnd(g.in_shape(), 22), positive_rnd(g.weight_shape(), 23), positive_rnd({g.out_shape()[1]}, 24)};
    const Function fb = [g](const std::vector<Variable>& v) { return conv(v[0], v[1], g, v[2]); };
    const CheckReport rb = check_adjoint(fb, in, 0, opt);
    INFO(rb.table());
    CHECK_FALSE(rb.ok);
    CHECK_THAT(rb.rows[0].note, Catch::Contains("not linear in input 0 (x)"));
    std::vector<Tensor> zero_bias = in;
    zero_bias[2] = Tensor::zeros(in[2].shape(), DType::f64);
    for (int k : {0, 1}) {
        const CheckReport r = check_adjoint(fb, zero_bias, k, opt);
        INFO(r.table());
        CHECK(r.ok);
        REQUIRE(r.rows.size() == 2);
        CHECK(r.rows[0].check == "adjoint");
        CHECK(r.rows[1].check == "linearity");
        CHECK(r.rows[1].ok);
        CHECK(r.rows[1].note.empty());
    }
    // a linear map in f32 passes too (the linearity check runs in f64)
    const Function lin = [](const std::vector<Variable>& v) { return v[0] * 3.0 - v[0] * 0.5; };
    CHECK(check_adjoint(lin, {x.to(DType::f32)}, 0, opt).ok);
}

TEST_CASE("a check report's table has a legend saying what analytic and numeric mean", "[gradcheck]") {
    const Function f = [](const std::vector<Variable>& v) { return v[0] * v[0]; };
    const std::string t = gradcheck(f, {positive_rnd({3}, 25)}).table();
    CHECK_THAT(t, Catch::Contains("legend: analytic/numeric = gradcheck, gradgradcheck: the tape's J^T v"));
    CHECK_THAT(t, Catch::Contains("central differences of <f(x), v> in f64"));
}

TEST_CASE("a check report, golden: the verdict first, a zero reference, the legend once, 80 columns", "[gradcheck]") {
    // Hand-made rows (the report's format, not a check): a passing row, a failing one whose
    // reference is 0, and a failing one with a note.
    CheckReport r;
    r.rows.push_back(CheckRow{"gradcheck", "x", 6, 6, {1, 2}, 0.25, 0.25, 1e-12, 4e-12, 1.0025e-05, true, ""});
    r.rows.push_back(CheckRow{"gradcheck", "weight", 4, 12, {0, 3}, 0.5, 0, 0.5, NAN, 1e-05, false, ""});
    r.rows.push_back(CheckRow{"linearity", "x", 6, 6, {0, 1}, 2, 1, 1, 1, 1e-13, false, "not linear in input 0 (x)"});
    r.ok = false;
    const std::string golden =
        "2 of 3 checks FAIL; first: gradcheck weight at [0, 3]: 0.5 vs 0 (|err| 0.5 > tol 1e-05, rel -)\n"
        "check         tensor elements     analytic    numeric    |err|      tol\n"
        "gradcheck     x 6                     0.25       0.25    1e-12    1e-05  ok\n"
        "gradcheck     weight 4/12              0.5          0      0.5    1e-05  FAIL\n"
        "  -> gradcheck weight at [0, 3]: 0.5 vs 0 (|err| 0.5 > tol 1e-05, rel -)\n"
        "linearity     x 6                        2          1        1    1e-13  FAIL\n"
        "  -> not linear in input 0 (x)\n"
        "legend: analytic/numeric = gradcheck, gradgradcheck: the tape's J^T v for a\n"
        "  random v / central differences of <f(x), v> in f64; adjoint: <A x, y> /\n"
        "  <x, A^T y>; linearity: f(a*x) or f(x+y) / a*f(x) or f(x)+f(y); \"<dtype> vs\n"
        "  f64\": the low-precision value / the f64 one. A row passes when |err| <= tol\n"
        "  (atol + rtol*|numeric| for gradcheck); a failing row names its worst\n"
        "  element (largest |err|/tol) and rel = |err|/|numeric| (- when numeric is 0).\n";
    CHECK(r.table() == golden);
    CHECK(r.summary() == golden.substr(0, golden.find('\n')));
    CHECK(r.failures() == "gradcheck weight at [0, 3]: 0.5 vs 0 (|err| 0.5 > tol 1e-05, rel -)\n"
                          "linearity x: not linear in input 0 (x)\n");
    // Every line of a report fits 80 columns (Catch2 v2 wraps at 80 and counts bytes), but
    // the one-line verdict and the failure lines that repeat it.
    std::istringstream lines(golden);
    for (std::string l; std::getline(lines, l);)
        if (l.rfind("2 of 3", 0) != 0 && l.rfind("  -> gradcheck", 0) != 0) CHECK(l.size() <= 78);

    // A real zero reference: f(x) = x·c with c = 0 has a zero gradient; a backward that
    // returns 1 fails, and its report says rel -, never a huge number.
    const Function wrong = [](const std::vector<Variable>& v) {
        return record("zero_times", binary_op(BinaryOp::Mul, v[0].value(), Tensor::zeros(v[0].shape(), DType::f64)), {v[0]},
                      {.inputs = {}, .output = false},
                      [](const SavedContext&, const Variable& g) -> Grads { return {g * 0.0 + 1.0}; });
    };
    const CheckReport z = gradcheck(wrong, {positive_rnd({3}, 26)});
    REQUIRE_FALSE(z.ok);
    CHECK(z.rows[0].b == 0);
    CHECK(std::isnan(z.rows[0].rel_err));
    CHECK_THAT(z.failures(), Catch::Contains("rel -)"));
    CHECK_THAT(z.table(), !Catch::Contains("e+"));  // no 1e+300
    const std::string zt = z.table();
    CHECK(zt.find("legend:") == zt.rfind("legend:"));  // once
}

TEST_CASE("check_precision fails a low-precision path that drifts from f64", "[gradcheck]") {
    // correct in f64, off by 1% in f16 (an 'accumulated in f16' kind of bug)
    const Function f = [](const std::vector<Variable>& v) {
        const Variable y = v[0] * v[0];
        return v[0].dtype() == DType::f16 ? y * 1.01 : y;
    };
    const Tensor x = positive_rnd({8}, 7);
    const CheckReport r = check_precision(f, {x}, DType::f16, 1);
    INFO(r.table());
    CHECK_FALSE(r.ok);
    CHECK_FALSE(row_of(r, "output").ok);
    CHECK(check_precision(f, {x}, DType::bf16, 1).ok);
}

TEST_CASE("check_precision fails a sum accumulated in the low precision", "[gradcheck]") {
    // 64 row sums of 1024 elements: accumulated in f32 and rounded once, or as running sums
    // rounded to f16 at every step, the bug the reduction-length term must not excuse.
    const Function good = [](const std::vector<Variable>& v) { return sum(v[0], {1}); };
    const Function running = [](const std::vector<Variable>& v) {
        const Tensor x = v[0].value();
        const std::int64_t rows = x.shape()[0], cols = x.shape()[1];
        const std::vector<double> xv = x.values();
        std::vector<double> out(static_cast<std::size_t>(rows));
        for (std::int64_t r = 0; r < rows; ++r) {
            double acc = 0;
            for (std::int64_t c = 0; c < cols; ++c) {
                acc += xv[static_cast<std::size_t>(r * cols + c)];
                if (x.dtype() == DType::f16) acc = f16_to_f32(f32_to_f16(static_cast<float>(acc)));
            }
            out[static_cast<std::size_t>(r)] = acc;
        }
        const Shape in = x.shape();
        return record("running_sum", Tensor::from({rows}, out, x.dtype()), {v[0]}, {},
                      [in](const SavedContext&, const Variable& g) -> Grads {
                          return {broadcast_to(reshape(g, {in[0], 1}), in)};
                      });
    };
    const Tensor x = tg::affine(positive_rnd({64, 1024}, 12), 1, -1);  // zero mean: the partial sums wander
    CHECK(check_precision(good, {x}, DType::f16, 1024).ok);
    const CheckReport r = check_precision(running, {x}, DType::f16, 1024);
    INFO(r.table());
    CHECK_FALSE(row_of(r, "output").ok);
}

namespace {

std::string run_capture(const std::string& cmd, int& rc) {
    std::string out;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    REQUIRE(p);
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    rc = WEXITSTATUS(pclose(p));
    return out;
}

}  // namespace

TEST_CASE("tapegrad gradcheck runs the three checks on a case and prints a table", "[gradcheck]") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("tapegrad_gradcheck_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    write_npy((dir / "data.npy").string(), positive_rnd({1, 4, 5, 5}, 8).to(DType::f32));
    write_npy((dir / "weights.npy").string(), positive_rnd({4, 3, 3, 3}, 9).to(DType::f32));  // IOX [IC, OC/g, K]
    write_npy((dir / "bias.npy").string(), positive_rnd({6}, 10).to(DType::f32));
    {
        std::ofstream c(dir / "case.json");
        c << R"({"opset": "onednn", "op": "ConvTranspose",
                 "attrs": {"strides": [2, 1], "pads_begin": [1, 0], "pads_end": [0, 1], "output_padding": [1, 0],
                           "groups": 2, "data_format": "NCX", "weights_format": "IOX"},
                 "inputs": ["data.npy", "weights.npy", "bias.npy"], "output": "out.npy"})";
    }
    int rc = -1;
    const std::string out = run_capture(std::string(TAPEGRAD_EXE) + " gradcheck " + (dir / "case.json").string(), rc);
    INFO(out);
    CHECK(rc == 0);
    for (const char* s : {"gradcheck     data", "gradcheck     filter", "gradcheck     bias", "gradgradcheck",
                          "adjoint       data", "adjoint       filter", "f32 vs f64    grad filter", "all checks passed"})
        CHECK_THAT(out, Catch::Contains(s));
    CHECK_THAT(out, !Catch::Contains("FAIL"));
    CHECK_FALSE(fs::exists(dir / "out.npy"));  // gradcheck writes nothing

    // an invalid case: exit 1 with one error: line
    {
        std::ofstream c(dir / "bad.json");
        c << R"({"op": "Convolution", "inputs": ["data.npy", "missing.npy"], "output": "out.npy"})";
    }
    const std::string bad = run_capture(std::string(TAPEGRAD_EXE) + " gradcheck " + (dir / "bad.json").string(), rc);
    CHECK(rc == 1);
    CHECK(bad.rfind("error: ", 0) == 0);
    CHECK(std::count(bad.begin(), bad.end(), '\n') == 1);
    fs::remove_all(dir);
}
