// The three fast kernels (im2col/GEMM/col2im, tiled) against the direct-loop reference and
// against each other through the adjoint identities of OPS.md section 2, over every row of
// the shared conv table, both layouts, and every float dtype.
//
// Tolerances: a sum of n products computed in floating point has error at most about
// n·eps·Σ|products|, so every comparison is relative to that per-element scale, which the
// reference gives exactly when fed |x| and |W|.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

#include "tapegrad/core/blas.hpp"
#include "isas.hpp"
#include "tapegrad/core/simd.hpp"
#include "tapegrad/core/tensor.hpp"
#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_kernels.hpp"
#include "tapegrad/ops/conv_plan.hpp"
#include "tapegrad/ops/conv_reference.hpp"
#include "tapegrad/ops/im2col.hpp"
#include "tapegrad/ops/vec.hpp"
#include "conv_table.hpp"
#include "tensor_helpers.hpp"

using namespace tg;
using tg::testing::ConvConfig;
using tg::testing::conv_table;
using tg::testing::WorkspaceGuard;
using tg::testing::SmallConvGuard;
using tg::testing::conv_paths;
using tg::testing::path_name;
using tg::testing::forward_geometry;
using tg::testing::transposed_geometry;
using tg::testing::abs_tensor;
using tg::testing::dot;
using tg::testing::random_tensor;

namespace {

// Restores the thread count and unforced teams even when a check throws.
struct TeamGuard {
    int n = num_threads();
    ~TeamGuard() {
        force_thread_teams(false);
        set_num_threads(n);
    }
};

// Round to `dt` and back to f64: the exact values a kernel of that dtype sees.
Tensor rounded(const Tensor& t, DType dt) { return t.to(dt).to(DType::f64); }

// Elements with |got − want| > factor·scale + tiny.
std::size_t out_of_tolerance(const Tensor& got, const Tensor& want, const Tensor& scale, double factor) {
    const std::vector<double> g = got.values(), w = want.values(), s = scale.values();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < g.size(); ++i)
        if (!(std::fabs(g[i] - w[i]) <= factor * s[i] + 1e-300)) ++bad;
    return bad;
}

// Half the spacing of dt's subnormals: the most that rounding a result of any scale to dt
// can add (a 16-bit result near zero, a sum that cancels, is off by up to 2^-25 in f16
// however small its products' scale).
double subnormal_floor(DType dt) {
    switch (dt) {
        case DType::f16: return 0x1p-25;
        case DType::bf16: return 0x1p-134;
        case DType::f32: return 0x1p-150;
        default: return 1e-300;
    }
}

// |got − want| ≤ factor·scale + floor, elementwise; reports the worst element.
void check_close(const Tensor& got, const Tensor& want, const Tensor& scale, double factor, const std::string& what,
                 double floor = 1e-300) {
    REQUIRE(got.shape() == want.shape());
    const std::vector<double> g = got.values(), w = want.values(), s = scale.values();
    std::size_t bad = 0, worst = 0;
    double worst_ratio = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
        const double err = std::fabs(g[i] - w[i]);
        const double tol = factor * s[i] + floor;
        if (!(err <= tol)) ++bad;
        const double ratio = err / tol;
        if (!(ratio <= worst_ratio)) { worst_ratio = ratio; worst = i; }
    }
    INFO(what << ": " << bad << " of " << g.size() << " elements out of tolerance; worst at " << worst << ": got "
              << (g.empty() ? 0 : g[worst]) << ", want " << (w.empty() ? 0 : w[worst]) << ", err/tol " << worst_ratio);
    CHECK(bad == 0);
}

std::string describe(const ConvConfig& c, Layout layout, DType dt) {
    std::ostringstream os;
    os << "row '" << c.name << "', " << (layout == Layout::NCX ? "NCX" : "NXC") << ", " << dtype_name(dt);
    return os.str();
}

// Longest sum any element of the three computations has: CONV sums Ig·∏K products,
// CONVT at most Og·∏K, CONV_BW N·∏Y.
double reduction_length(const ConvGeometry& g) {
    return static_cast<double>(std::max({g.R(), g.Og * g.kernel_numel(), g.N * g.out_numel(), std::int64_t{1}}));
}

// Tolerance factor (times Σ|products|) for a kernel computing in `dt`.
double factor_for(DType dt, const ConvGeometry& g) {
    const double n = reduction_length(g) + 2;
    switch (dt) {
        case DType::f64: return 1e-12;
        case DType::f32: return n * dtype_epsilon(DType::f32);
        // 16-bit: accumulate in f32, then one rounding of the result to the narrow type.
        default: return dtype_epsilon(dt) + n * dtype_epsilon(DType::f32);
    }
}

// The three kernels on one geometry vs the reference, for inputs exactly representable in
// dt: at the active instruction set, or at each of `isas` in turn (the references made once).
void check_against_reference(const ConvGeometry& g, DType dt, std::mt19937_64& rng, const std::string& what,
                             const std::vector<simd::Isa>& isas = {}) {
    const Tensor x = rounded(random_tensor(g.in_shape(), rng), dt);
    const Tensor u = rounded(random_tensor(g.out_shape(), rng), dt);
    const Tensor W = rounded(random_tensor(g.weight_shape(), rng), dt);
    const Tensor ax = abs_tensor(x), au = abs_tensor(u), aW = abs_tensor(W);
    const double f = factor_for(dt, g);
    const Tensor ry = reference::conv_forward(x, W, g), sy = reference::conv_forward(ax, aW, g);
    const Tensor rr = reference::conv_transposed(u, W, g), sr = reference::conv_transposed(au, aW, g);
    const Tensor rw = reference::conv_weight_grad(x, u, g), sw = reference::conv_weight_grad(ax, au, g);
    const std::vector<simd::Isa> run = isas.empty() ? std::vector<simd::Isa>{simd::active()} : isas;
    for (simd::Isa isa : run) {
        if (!isas.empty()) simd::force(isa);
        const std::string at = what + (isas.empty() ? "" : std::string(" at ") + simd::isa_name(isa));
        const Tensor y = conv_forward(x.to(dt), W.to(dt), g);
        CHECK(y.dtype() == dt);
        check_close(y.to(DType::f64), ry, sy, f, at + " conv_forward", subnormal_floor(dt));
        const Tensor r = conv_transposed(u.to(dt), W.to(dt), g);
        CHECK(r.dtype() == dt);
        check_close(r.to(DType::f64), rr, sr, f, at + " conv_transposed", subnormal_floor(dt));
        const Tensor dW = conv_weight_grad(x.to(dt), u.to(dt), g);
        CHECK(dW.dtype() == dt);
        check_close(dW.to(DType::f64), rw, sw, f, at + " conv_weight_grad", subnormal_floor(dt));
    }
}

// ⟨CONV(x, W), u⟩ = ⟨x, CONVT(u, W)⟩ = ⟨W, CONV_BW(x, u)⟩, all three from the fast kernels.
void check_adjoint(const ConvGeometry& g, DType dt, std::mt19937_64& rng, const std::string& what) {
    const Tensor x = random_tensor(g.in_shape(), rng).to(dt);
    const Tensor u = random_tensor(g.out_shape(), rng).to(dt);
    const Tensor W = random_tensor(g.weight_shape(), rng).to(dt);
    const double a = dot(conv_forward(x, W, g), u);
    const double b = dot(x, conv_transposed(u, W, g));
    const double c = dot(W, conv_weight_grad(x, u, g));
    // Σ|products| of the whole triple sum, the same for all three bracketings.
    const double scale = dot(reference::conv_forward(abs_tensor(x.to(DType::f64)), abs_tensor(W.to(DType::f64)), g),
                             abs_tensor(u.to(DType::f64)));
    const double tol = factor_for(dt, g) * scale + 1e-300;
    INFO(what << " adjoint: <CONV(x),u> = " << a << ", <x,CONVT(u)> = " << b << ", <W,CONV_BW(x,u)> = " << c
              << ", scale " << scale << ", tol " << tol);
    CHECK(std::fabs(a - b) <= tol);
    CHECK(std::fabs(a - c) <= tol);
    CHECK(std::fabs(b - c) <= tol);
    // The identity is not vacuous: the sums are not all (near) zero.
    CHECK(scale > 0);
}

}  // namespace

TEST_CASE("conv kernels match the direct-loop reference on every table row", "[kernels]") {
    std::mt19937_64 rng(20240611);
    for (SmallConv path : conv_paths()) {
        const SmallConvGuard sc(path);
        for (const ConvConfig& c : conv_table()) {
            const WorkspaceGuard ws(c.budget);
            for (Layout layout : {Layout::NCX, Layout::NXC}) {
                for (DType dt : {DType::f64, DType::f32}) {
                    const std::string what = describe(c, layout, dt) + path_name(path);
                    check_against_reference(forward_geometry(c, layout), dt, rng, what + " forward_geometry");
                    check_against_reference(transposed_geometry(c, layout), dt, rng, what + " transposed_geometry");
                }
            }
        }
    }
    CHECK(workspace_budget() == (std::int64_t{64} << 20));
}

TEST_CASE("both transposed algorithms (col2im, stride phases) match the reference on every table row",
          "[kernels][phases]") {
    struct Restore {
        ~Restore() { set_transposed_algo(TransposedAlgo::Auto); }
    } restore;
    std::mt19937_64 rng(31);
    for (TransposedAlgo algo : {TransposedAlgo::Col2im, TransposedAlgo::Phases}) {
        set_transposed_algo(algo);
        const std::string name = algo == TransposedAlgo::Phases ? " phases" : " col2im";
        for (const ConvConfig& c : conv_table()) {
            const WorkspaceGuard ws(c.budget);
            for (DType dt : {DType::f64, DType::f32}) {
                check_against_reference(forward_geometry(c, Layout::NCX), dt, rng, describe(c, Layout::NCX, dt) + name);
                check_against_reference(transposed_geometry(c, Layout::NCX), dt, rng,
                                        describe(c, Layout::NCX, dt) + name + " transposed_geometry");
            }
        }
    }
}

TEST_CASE("f32 and bf16 kernels match the reference at every SIMD instruction set the CPU has", "[kernels][simd]") {
    const tg::testing::IsaGuard restore;
    std::mt19937_64 rng(77);
    for (simd::Isa isa : tg::testing::tested_isas()) {
        simd::force(isa);
        for (SmallConv path : conv_paths()) {
            const SmallConvGuard sc(path);
            for (const ConvConfig& c : conv_table()) {
                const WorkspaceGuard ws(c.budget);
                for (Layout layout : {Layout::NCX, Layout::NXC}) {
                    if (layout == Layout::NXC && path == SmallConv::Always) continue;  // the same GEMM path
                    for (DType dt : {DType::f32, DType::bf16})
                        check_against_reference(transposed_geometry(c, layout), dt, rng,
                                                describe(c, layout, dt) + " at " + simd::isa_name(isa) + path_name(path));
                }
            }
        }
    }
}

// The transposed calls the plan gives the channel rows past the table's channel counts: 9-16
// o-side channels to 136-160 i-side ones (more result channels than kRowsMaxGradResult), 2-D
// and 3-D, at every instruction set.
TEST_CASE("the channel rows' transposed call of a few o-side channels to many matches the reference at every instruction set",
          "[kernels][simd]") {
    const tg::testing::IsaGuard restore;
    std::mt19937_64 rng(78);
    const ConvGeometry a = ConvGeometry::forward({.N = 2, .C_in = 160, .C_out = 12, .in_size = {9, 9}, .kernel = {3, 3}});
    const ConvGeometry b = ConvGeometry::forward({.N = 1, .C_in = 136, .C_out = 9, .in_size = {7, 7, 7}, .kernel = {3, 3, 3},
                                                  .stride = {2, 2, 2}, .pads_begin = {1, 1, 1}, .pads_end = {1, 1, 1}});
    for (const ConvGeometry& g : {a, b}) {
        CHECK(plan_conv(ConvKind::Transposed, g, 1, workspace_budget(), 4, TransposedAlgo::Auto).strategy == ConvStrategy::Rows);
        check_against_reference(g, DType::f32, rng, "few to many " + std::to_string(g.D()) + "-D", tg::testing::tested_isas());
    }
}

// The weight gradient's im2col (im2col_ncx into the GEMM's transposed panels) fills the rows
// of several panels at a time, as many channels of a tap as make its runs worth deciding
// once: layers with more channels than the table's, whose reduction (Ig·∏K rows) spans
// several such chunks and ends inside a panel; short runs (stride 2, 2-D and 3-D) and long
// ones (1-D, stride 1), at every instruction set, on the GEMM path.
TEST_CASE("the weight gradient's im2col in chunks of panels matches the reference at every instruction set",
          "[kernels][simd]") {
    const tg::testing::IsaGuard restore;
    const SmallConvGuard sc(SmallConv::Never);
    std::mt19937_64 rng(4242);
    const std::vector<ConvConfig> rows = {
        {"2d 40 channels stride2", 2, 1, 40, 3, {{9, 3, 2, 1, 1, 1}, {10, 3, 2, 1, 1, 1}}},
        {"3d 12 channels stride2", 1, 1, 12, 2, {{7, 3, 2, 1, 1, 1}, {6, 3, 2, 1, 1, 1}, {7, 3, 2, 1, 1, 1}}},
        {"1d 24 channels long runs", 2, 1, 24, 5, {{40, 5, 1, 1, 2, 2}}},
        {"2d 33 channels groups2 tiles", 3, 2, 33, 2, {{8, 3, 2, 1, 1, 1}, {7, 2, 1, 1, 0, 1}}, 20000},
    };
    for (simd::Isa isa : tg::testing::tested_isas()) {
        simd::force(isa);
        for (const ConvConfig& c : rows) {
            const WorkspaceGuard ws(c.budget);
            for (DType dt : {DType::f32, DType::f64})
                check_against_reference(forward_geometry(c, Layout::NCX), dt, rng,
                                        describe(c, Layout::NCX, dt) + " at " + simd::isa_name(isa));
        }
    }
}

// Where the last axis has dilation 1, a stride of 3 or more and 8 taps or more, the weight
// gradient's colᵀ and the forward's col (through transposed plain rows) take each position's
// last-axis taps as one run from the input (list_tap_runs): 1-D to 3-D, pads cutting runs at
// both ends, ∏K of 16, 18, 24 and 32 against panels of 16 and 32 rows (pieces of a channel's
// taps in two panels), groups, tiles of part of an image (a small budget) and of several
// images. At every instruction set against the reference; one o-side element left out of the
// weight gradient, and one weight element left out of the forward, must be seen.
TEST_CASE("the weight gradient's tap runs match the reference at every instruction set, and a planted error is caught",
          "[kernels][simd]") {
    const tg::testing::IsaGuard restore;
    const SmallConvGuard sc(SmallConv::Never);
    std::mt19937_64 rng(7171);
    const std::vector<ConvConfig> rows = {
        {"1d k16 s8 p4 (audio1d_k16s8's)", 2, 1, 5, 3, {{40, 16, 8, 1, 4, 4}}},
        {"2d k3x8 s2x3", 3, 1, 4, 2, {{9, 3, 2, 1, 1, 1}, {30, 8, 3, 1, 2, 2}}},
        {"2d k2x9 s1x4 groups 2", 2, 2, 3, 2, {{6, 2, 1}, {40, 9, 4, 1, 3, 3}}},
        {"3d k2x2x8 s2x2x4", 1, 1, 3, 2, {{5, 2, 2}, {4, 2, 2, 1, 1, 0}, {30, 8, 4, 1, 2, 1}}},
        {"1d k10 s3 tiles", 2, 1, 7, 2, {{200, 10, 3, 1, 4, 4}}, 3000},
    };
    const std::vector<simd::Isa> isas = tg::testing::tested_isas();
    for (const ConvConfig& c : rows) {
        const WorkspaceGuard ws(c.budget);
        const ConvGeometry g = forward_geometry(c, Layout::NCX);
        check_against_reference(g, DType::f32, rng, describe(c, Layout::NCX, DType::f32), isas);
        const Tensor x = rounded(random_tensor(g.in_shape(), rng), DType::f32);
        const Tensor u = rounded(random_tensor(g.out_shape(), rng), DType::f32);
        const Tensor W = rounded(random_tensor(g.weight_shape(), rng), DType::f32);
        const Tensor scale = reference::conv_weight_grad(abs_tensor(x), abs_tensor(u), g);
        const Tensor fscale = reference::conv_forward(abs_tensor(x), abs_tensor(W), g);
        std::vector<double> uv = u.values(), wv = W.values();
        uv[0] = 0;
        wv.back() = 0;  // the last last-axis tap of the last channels
        const Tensor planted = reference::conv_weight_grad(x, Tensor::from(u.shape(), uv, DType::f64), g);
        const Tensor fplanted = reference::conv_forward(x, Tensor::from(W.shape(), wv, DType::f64), g);
        for (simd::Isa isa : isas) {
            simd::force(isa);
            INFO(c.name << " at " << simd::isa_name(isa) << ": a planted error");
            CHECK(out_of_tolerance(conv_weight_grad(x.to(DType::f32), u.to(DType::f32), g).to(DType::f64), planted, scale,
                                   factor_for(DType::f32, g)) > 0);
            CHECK(out_of_tolerance(conv_forward(x.to(DType::f32), W.to(DType::f32), g).to(DType::f64), fplanted, fscale,
                                   factor_for(DType::f32, g)) > 0);
        }
    }
}

// Bitwise for f32 (tapegrad's GEMM sums every element in the same order however the work is
// split) when the tiling does not depend on the team: a small workspace budget is divided
// between the threads' buffers, so those rows (and f64 on OpenBLAS, whose kernels depend on
// the block sizes) are held to the reference tolerance instead.
TEST_CASE("thread teams (forced on small cases) give the results of one thread", "[kernels][threads]") {
    const TeamGuard restore;
    std::mt19937_64 rng(99);
    for (SmallConv path : conv_paths())
    for (const ConvConfig& c : conv_table()) {
        const SmallConvGuard sc(path);
        const WorkspaceGuard ws(c.budget);
        for (Layout layout : {Layout::NCX, Layout::NXC})
            for (DType dt : {DType::f64, DType::f32})
                for (const ConvGeometry& g : {forward_geometry(c, layout), transposed_geometry(c, layout)}) {
                    const Tensor x = random_tensor(g.in_shape(), rng).to(dt), u = random_tensor(g.out_shape(), rng).to(dt),
                                 W = random_tensor(g.weight_shape(), rng).to(dt);
                    std::vector<std::vector<double>> runs;
                    for (int threads : {1, 2, 3}) {
                        set_num_threads(threads);
                        force_thread_teams(threads > 1);
                        std::vector<double> all = conv_forward(x, W, g).values();
                        for (const Tensor& t : {conv_transposed(u, W, g), conv_weight_grad(x, u, g)}) {
                            const std::vector<double> v = t.values();
                            all.insert(all.end(), v.begin(), v.end());
                        }
                        runs.push_back(std::move(all));
                    }
                    INFO(describe(c, layout, dt) << path_name(path));
                    // (The direct kernels' sums do not depend on the team or the budget.)
                    if (dt == DType::f32 && (c.budget == (std::int64_t{64} << 20) || (path == SmallConv::Always && layout == Layout::NCX))) {
                        CHECK(runs[1] == runs[0]);
                        CHECK(runs[2] == runs[0]);
                    } else {
                        const double tol = factor_for(dt, g) * 64;  // |values| of these sums stay below ~64
                        for (int r = 1; r < 3; ++r)
                            for (std::size_t i = 0; i < runs[0].size(); ++i)
                                if (!(std::fabs(runs[r][i] - runs[0][i]) <= tol)) FAIL_CHECK("element " << i << " differs");
                    }
                }
    }
}

// f()'s values at 1, 2 and 3 threads, teams forced on above 1 (the caller restores the
// settings with a TeamGuard).
template <class F>
std::vector<std::vector<double>> at_1_2_3_threads(F&& f) {
    std::vector<std::vector<double>> runs;
    for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        force_thread_teams(threads > 1);
        runs.push_back(f().values());
    }
    return runs;
}

// The weight gradient over several tiles at the default budget runs by partial sums, one
// per tile, added in tile order: a team of 2 or 3 threads gives one thread's bits, and the
// values are the reference's. NCX tiles hold 1024 columns here (2 tiles: the columns of
// 3 images of 20 × 20), NXC ones 512 (R = 1152; 3 tiles).
TEST_CASE("the weight gradient's partial sums over tiles: any team gives one thread's bits", "[kernels][threads]") {
    const TeamGuard restore;
    const SmallConvGuard gemm(SmallConv::Never);
    std::mt19937_64 rng(515);
    const std::vector<std::pair<Layout, ConvConfig>> cases = {
        {Layout::NCX, {"partials NCX", 3, 1, 2, 256, {{22, 3}, {22, 3}}}},
        {Layout::NXC, {"partials NXC", 3, 1, 128, 4, {{22, 3}, {22, 3}}}},
    };
    for (const auto& [layout, c] : cases) {
        const ConvGeometry g = forward_geometry(c, layout);
        const Tensor x = random_tensor(g.in_shape(), rng).to(DType::f32), u = random_tensor(g.out_shape(), rng).to(DType::f32);
        const std::vector<std::vector<double>> runs = at_1_2_3_threads([&] { return conv_weight_grad(x, u, g); });
        INFO(describe(c, layout, DType::f32));
        CHECK(runs[1] == runs[0]);
        CHECK(runs[2] == runs[0]);
        check_against_reference(g, DType::f32, rng, describe(c, layout, DType::f32) + " partial sums");
    }
}

// The channel rows split a chunk's long rows in parts of positions when it has fewer rows
// than the team has threads, the source's copies and the results (here one 1-D image of
// 150 → 300 positions; parts at 2 and 3 threads, in the stride's phases for the transposed
// kernel; it fails with a part's copy taken from the row's start), and the weight gradient puts
// its team on a grid of groups × channel slices × taps: every team gives one thread's bits,
// and the values are the reference's.
TEST_CASE("channel rows: parts of long rows and the weight gradient's grid give one thread's bits", "[kernels][threads][rows]") {
    const TeamGuard restore;
    const SmallConvGuard rows(SmallConv::Rows);
    std::mt19937_64 rng(717);
    // Fewer than 16 i-side channels: the weight gradient sums the images in two parts, a
    // thread each (1 + 2 of 3 images too); of one image, a team's pairs take runs of last-axis
    // taps (all 4 at 1 thread, 2 + 2 at 2, 1 + 1 + 2 at 3 on the 1-D layer; all at every team
    // on the 2-D one, whose 4 outer taps give every member a pair).
    for (const ConvConfig& c : {ConvConfig{"rows 1d long", 1, 1, 20, 24, {{150, 4, 2, 1, 1, 1}}},
                                ConvConfig{"rows 2d groups2", 2, 2, 24, 16, {{9, 3, 2, 1, 1, 1, 1}, {6, 3, 1, 1, 1, 1}}},
                                ConvConfig{"rows 1d 5 i-side channels", 2, 1, 5, 24, {{30, 4, 1, 1, 1, 2}}},
                                ConvConfig{"rows 1d 5 i-side channels, 1 image", 1, 1, 5, 24, {{30, 4, 1, 1, 1, 2}}},
                                ConvConfig{"rows 2d 3 i-side channels", 2, 1, 3, 40, {{9, 4, 2, 1, 1, 1}, {8, 4, 2, 1, 1, 1}}},
                                ConvConfig{"rows 2d 3 i-side channels, 3 images", 3, 1, 3, 40, {{9, 4, 2, 1, 1, 1}, {8, 4, 2, 1, 1, 1}}},
                                ConvConfig{"rows 2d 3 i-side channels, 1 image", 1, 1, 3, 40, {{9, 4, 2, 1, 1, 1}, {8, 4, 2, 1, 1, 1}}},
                                // 64 i-side channels, 16 o-side: the weight gradient's slices of 64,
                                // 32 and 21-22 reduction channels into one vector of result
                                // channels at AVX-512 (tiles of 21-22, 16 and 21-22 × 1 vector).
                                ConvConfig{"rows 2d 64 -> 16 channels", 2, 1, 64, 16, {{7, 3, 1, 1, 1, 1}, {6, 4, 2, 1, 1, 1}}}})
        for (Layout layout : {Layout::NCX, Layout::NXC}) {
            const ConvGeometry g = transposed_geometry(c, layout);
            const Tensor x = random_tensor(g.in_shape(), rng).to(DType::f32), u = random_tensor(g.out_shape(), rng).to(DType::f32),
                         W = random_tensor(g.weight_shape(), rng).to(DType::f32);
            INFO(describe(c, layout, DType::f32));
            for (const auto& f : std::vector<std::function<Tensor()>>{[&] { return conv_forward(x, W, g); },
                                                                      [&] { return conv_transposed(u, W, g); },
                                                                      [&] { return conv_weight_grad(x, u, g); }}) {
                const std::vector<std::vector<double>> runs = at_1_2_3_threads(f);
                CHECK(runs[1] == runs[0]);
                CHECK(runs[2] == runs[0]);
            }
            set_num_threads(2);
            force_thread_teams(true);
            check_against_reference(g, DType::f32, rng, describe(c, layout, DType::f32) + " rows at 2 threads");
        }
}

// A transposed convolution whose weight does not fit beside a tile in L2 (576 KiB here) is
// split between threads by output channels, each with its rows of the weight; tiles of
// whole images, two images each at 2 threads (u staged): one thread's bits, and the
// reference's values.
TEST_CASE("the transposed kernel split by channels gives one thread's bits", "[kernels][threads]") {
    const TeamGuard restore;
    const SmallConvGuard gemm(SmallConv::Never);
    std::mt19937_64 rng(616);
    const ConvConfig c{"big weight", 4, 1, 128, 288, {{4, 2, 2, 1, 0, 0, 0}, {4, 2, 2, 1, 0, 0, 0}}};
    const ConvGeometry g = transposed_geometry(c, Layout::NCX);
    const Tensor u = random_tensor(g.out_shape(), rng).to(DType::f32), W = random_tensor(g.weight_shape(), rng).to(DType::f32);
    const std::vector<std::vector<double>> runs = at_1_2_3_threads([&] { return conv_transposed(u, W, g); });
    CHECK(runs[1] == runs[0]);
    CHECK(runs[2] == runs[0]);
    set_num_threads(2);
    force_thread_teams(true);
    check_against_reference(g, DType::f32, rng, "big weight, 2 threads");
}

// The tiling (ops/conv_kernels.cpp make_tiles) over shapes the table leaves out: batches
// that tiles do not divide (tiles of unequal image counts), chunks of one image, tile counts
// rounded up to a multiple of the team, and the ways a team shares the work. Small
// workspace budgets force every kind of tile on these small shapes (and, with one image,
// the transposed kernel's split by channels).
TEST_CASE("conv kernels match the reference on every kind of tile and team", "[kernels][threads]") {
    const TeamGuard restore;
    const SmallConvGuard gemm(SmallConv::Never);
    const std::vector<ConvConfig> configs = {
        {"1x1 batch5", 5, 1, 3, 4, {{6, 1}, {5, 1}}},
        {"kernel = stride", 3, 1, 2, 3, {{6, 2, 2}, {8, 2, 2}}},
        {"long 1d", 3, 1, 2, 3, {{300, 4, 2, 1, 1, 1}}},
        {"3d stride pad op", 3, 1, 2, 2, {{4, 2, 2, 1, 0, 0, 1}, {5, 3, 1, 1, 1, 1}, {6, 2, 2, 1, 1, 0}}},
        {"2d groups dilation op batch5", 5, 2, 2, 3, {{7, 3, 2, 2, 2, 1, 1}, {6, 3, 2, 1, 1, 1}}},
        {"2d grouped 4 batch3", 3, 4, 2, 2, {{9, 3, 2, 1, 1, 1}, {5, 3, 1, 1, 1, 1}}},
        {"2d one image, chunks by channels", 1, 1, 5, 3, {{9, 3, 2, 1, 1, 1, 1}, {8, 3, 1, 1, 1, 1}}},
    };
    std::mt19937_64 rng(4242);
    for (const ConvConfig& c : configs)
        for (std::int64_t budget : {std::int64_t{64} << 20, std::int64_t{1500}, std::int64_t{400}}) {
            const WorkspaceGuard ws(budget);
            for (int threads : {1, 2, 3}) {
                // Three threads on a two-core machine make every barrier wait for a time
                // slice: kept to the few tiles of the default budget.
                if (threads == 3 && budget < (std::int64_t{64} << 20)) continue;
                set_num_threads(threads);
                force_thread_teams(threads > 1);
                for (Layout layout : {Layout::NCX, Layout::NXC})
                    for (DType dt : {DType::f32, DType::f64}) {
                        if (dt == DType::f64 && threads > 1) continue;  // the tiling is the same as f32's
                        const std::string what = describe(c, layout, dt) + ", budget " + std::to_string(budget) + ", " +
                                                 std::to_string(threads) + " threads";
                        check_against_reference(forward_geometry(c, layout), dt, rng, what + " forward_geometry");
                        check_against_reference(transposed_geometry(c, layout), dt, rng, what + " transposed_geometry");
                    }
            }
        }
}

namespace {

// A family of direct kernels forced on (`path`): every row of the conv table and `extra` in
// the first of `layouts` (`extra` alone in the others: the table's rows run in every layout
// through the generic tests), forward and transposed, in f32 and f64, at every instruction
// set, against the reference (made once for all of them); on the rows that are not depthwise
// (first layout) the plan names `strategy` for each of `kinds`, and the comparison is tight
// enough to see one product missing (a planted error: the reference
// without one weight element, and for the weight gradient without one o-side element).
void check_direct_kernels(SmallConv path, ConvStrategy strategy, const std::vector<ConvKind>& kinds,
                          const std::vector<ConvConfig>& extra, std::uint64_t seed, const std::vector<Layout>& layouts) {
    const tg::testing::IsaGuard restore;
    const SmallConvGuard direct(path);
    std::mt19937_64 rng(seed);
    std::vector<ConvConfig> rows = conv_table();
    rows.insert(rows.end(), extra.begin(), extra.end());
    const std::vector<simd::Isa> isas = tg::testing::tested_isas();
    for (Layout layout : layouts)
        for (const ConvConfig& c : layout == layouts.front() ? rows : extra)
            for (DType dt : {DType::f32, DType::f64}) {
                const std::string what = describe(c, layout, dt);
                check_against_reference(forward_geometry(c, layout), dt, rng, what + " forward_geometry", isas);
                check_against_reference(transposed_geometry(c, layout), dt, rng, what + " transposed_geometry", isas);
            }
    for (simd::Isa isa : isas) {
        simd::force(isa);
        for (const ConvConfig& c : rows) {
            if (c.Ig == 1 && c.Og == 1) continue;  // depthwise: not these kernels
            const ConvGeometry g = transposed_geometry(c, layouts.front());
            for (ConvKind kind : kinds)
                CHECK(plan_conv(kind, g, 1, workspace_budget(), 4, TransposedAlgo::Auto, small_conv()).strategy == strategy);
            const Tensor x = random_tensor(g.in_shape(), rng), u = random_tensor(g.out_shape(), rng);
            const Tensor W = random_tensor(g.weight_shape(), rng);
            const double f = factor_for(DType::f32, g);
            // One weight element (the middle tap of the first pair of channels) off by one: an
            // error as large as the elements it multiplies (left out, a random element of
            // [-1, 1] may be too small to see beside a long sum's rounding).
            std::vector<double> wv = W.values();
            wv[static_cast<std::size_t>(g.kernel_numel() / 2)] += 1;
            const Tensor Wp = Tensor::from(W.shape(), wv, DType::f64);
            // One o-side element (the first) off by one in the weight gradient.
            std::vector<double> uv = u.values();
            uv[0] += 1;
            const Tensor up = Tensor::from(u.shape(), uv, DType::f64);
            const Tensor xf = x.to(DType::f32), uf = u.to(DType::f32), Wf = W.to(DType::f32);
            INFO(describe(c, layouts.front(), DType::f32) << " at " << simd::isa_name(isa) << ": a planted error");
            for (ConvKind kind : kinds) {
                if (kind == ConvKind::Forward)
                    CHECK(out_of_tolerance(conv_forward(xf, Wf, g).to(DType::f64), reference::conv_forward(x, Wp, g),
                                           reference::conv_forward(abs_tensor(x), abs_tensor(W), g), f) > 0);
                else if (kind == ConvKind::Transposed)
                    CHECK(out_of_tolerance(conv_transposed(uf, Wf, g).to(DType::f64), reference::conv_transposed(u, Wp, g),
                                           reference::conv_transposed(abs_tensor(u), abs_tensor(W), g), f) > 0);
                else
                    CHECK(out_of_tolerance(conv_weight_grad(xf, uf, g).to(DType::f64), reference::conv_weight_grad(x, up, g),
                                           reference::conv_weight_grad(abs_tensor(x), abs_tensor(u), g), f) > 0);
            }
        }
    }
}

}  // namespace

// The direct small-channel kernels (tapegrad/ops/conv_small.hpp). The table's rows have at
// most 4 channels a side: the extra rows reach the register tiles of 8 output channels and
// their remainders (13 = 8 + 5, 9 = 8 + 1, 20 = 8 + 8 + 4).
TEST_CASE("the small-channel kernels match the reference at every instruction set, and a planted error is caught",
          "[kernels][simd][small]") {
    check_direct_kernels(SmallConv::Always, ConvStrategy::Small, {ConvKind::Forward, ConvKind::Transposed, ConvKind::WeightGrad},
                         {{"2d 3 -> 13 channels", 2, 1, 3, 13, {{9, 3, 2, 1, 1, 1, 1}, {8, 3, 1, 1, 1, 1}}},
                          {"1d 9 -> 20 channels", 2, 1, 9, 20, {{11, 4, 2, 1, 1, 1}}},
                          {"2d groups2 8 -> 9", 1, 2, 8, 9, {{6, 3, 1, 2, 2, 2}, {7, 2, 2, 1, 0, 1, 1}}},
                          // Strides 3 to 5 on the last axis, result rows with elements past the
                          // last whole group (35 = 11·3 + 2, 38 = 9·4 + 2, 29 = 5·5 + 4): the
                          // transposed call's phase rows interleaved as vectors (3, 4) and one
                          // by one (5).
                          {"2d 4 -> 6 stride3", 2, 1, 4, 6, {{5, 4, 3, 1, 1, 1}, {12, 4, 3, 1, 1, 1}}},
                          {"1d 5 -> 7 stride4", 2, 1, 5, 7, {{10, 5, 4, 1, 2, 1}}},
                          {"2d 3 -> 4 stride5", 1, 1, 3, 4, {{4, 3, 1, 1, 1, 1}, {6, 6, 5, 1, 1, 1}}}},
                         1212, {Layout::NCX});
}

// The channel-row kernels (tapegrad/ops/conv_rows.hpp). The extra rows have tens of channels: channel blocks of 1 to
// 4 vectors and a part vector at AVX2 and AVX-512, long rows in several register tiles,
// groups, strides, dilations, output padding, 1-D to 3-D.
TEST_CASE("the channel-row kernels match the reference at every instruction set, and a planted error is caught",
          "[kernels][simd][rows]") {
    check_direct_kernels(SmallConv::Rows, ConvStrategy::Rows, {ConvKind::Forward, ConvKind::Transposed, ConvKind::WeightGrad},
                         {{"1d 20 -> 37 channels long rows", 1, 1, 20, 37, {{40, 5, 1, 1, 2, 2}}},
                          {"1d 9 -> 70 channels stride3 op2", 1, 1, 9, 70, {{13, 4, 3, 1, 1, 2, 2}}},
                          {"2d 33 -> 16 channels stride2", 1, 1, 33, 16, {{7, 4, 2, 1, 1, 1}, {8, 3, 2, 1, 1, 1, 1}}},
                          // Many reduction channels into one vector of result channels at
                          // AVX-512 (the weight gradient's 24 × 1 tiles, 96 = 4 × 24).
                          {"2d 96 -> 16 channels", 1, 1, 96, 16, {{6, 3, 1, 1, 1, 1}, {5, 3, 1, 1, 1, 1}}},
                          {"2d groups3 8 -> 24 dil2", 1, 3, 8, 24, {{8, 3, 1, 2, 2, 2}, {7, 3, 1, 2, 2, 2}}},
                          {"3d 16 -> 17 channels stride2", 1, 1, 16, 17,
                           {{4, 4, 2, 1, 1, 1}, {3, 3, 2, 1, 1, 0, 1}, {6, 4, 2, 1, 1, 1}}},
                          // A forward call of 3 reduction channels on padded 3-D grids (the
                          // plan's rows for few sums: most of each tap's rows are padding).
                          {"3d 20 -> 3 channels k5 stride2 pad2", 2, 1, 20, 3,
                           {{4, 5, 2, 1, 2, 2}, {3, 5, 2, 1, 2, 2}, {4, 3, 2, 1, 1, 1}}},
                          // The weight gradient's runs of taps (6 i-side channels × 4 taps a
                          // pair: 24 rows of sums, 20 result channels in a vector and a part).
                          {"1d 6 -> 20 channels k4", 1, 1, 6, 20, {{25, 4, 1, 1, 1, 2}}},
                          // Padded 3-D layers past the channel and tap-block limits of the other
                          // layers (the plan's rule for taps in padding): 144 result channels
                          // (9 vectors at AVX-512, 18 at AVX2), and a 200 × 48 tap block (37.5 KiB).
                          {"3d 40 -> 144 channels k3 stride2 pad1", 1, 1, 40, 144,
                           {{4, 3, 2, 1, 1, 1}, {3, 3, 2, 1, 1, 1}, {4, 3, 2, 1, 1, 1}}},
                          {"3d 200 -> 48 channels k3 stride2 pad1", 1, 1, 200, 48,
                           {{3, 3, 2, 1, 1, 1}, {3, 3, 2, 1, 1, 1}, {4, 3, 2, 1, 1, 1}}}},
                         2626, {Layout::NCX, Layout::NXC});
}

// Where the direct kernels would multiply an infinity or a NaN by zeros the reference never
// forms products with (the transposed kernels' weight, the weight gradients' x, the
// channel-row weight gradient's u), they hand the call to the GEMM
// path: the results are that path's, bit for bit. The channel-row forward kernel forms the
// im2col path's products in another order: NaN where it gives NaN, the same infinities.
namespace {

// The reference of a forward call (x → y) or a transposed one (u → r) of geometry g.
Tensor reference_of(ConvKind kind, const Tensor& a, const Tensor& W, const ConvGeometry& g) {
    return kind == ConvKind::Forward ? reference::conv_forward(a, W, g) : reference::conv_transposed(a, W, g);
}

// A weight element left out (the last tap of the last result channel, from the last o-side
// channel) must be seen in the f32 result of the forward or transposed call `run` gives (as
// f64; its operand `a`), at every one of `isas`, within the tolerance of the checks against
// the reference.
void check_planted_weight(ConvKind kind, const ConvGeometry& g, const Tensor& a, const Tensor& W, const Tensor& scale,
                          const std::vector<simd::Isa>& isas, const std::string& name, const std::function<Tensor()>& run) {
    std::vector<double> wv = W.values();
    wv.back() = 0;
    const Tensor planted = reference_of(kind, a, Tensor::from(W.shape(), wv, DType::f64), g);
    for (simd::Isa isa : isas) {
        simd::force(isa);
        INFO(name << " at " << simd::isa_name(isa) << ": a planted error");
        CHECK(out_of_tolerance(run(), planted, scale, factor_for(DType::f32, g)) > 0);
    }
}

}  // namespace

// The NCX transposed GEMM made and col2im'd a block of rows at a time (gemm_row_blocks): rows
// of whole channels that the GEMM's micro-panels do not divide (∏K = 9, 16, 27, 1 against
// MR = 6 and 12), a tile of one image read in place and tiles of several images staged,
// groups, and teams of 1, 2 and 3 threads (Serial, Units, Images, Channels: each thread
// its own blocks). The plan must give each call blocks of fewer rows than col has at
// f32 (else this tests the whole-col path); f64 runs whole on OpenBLAS. A weight element of
// the last result channel (the last block) left out must be seen.
TEST_CASE("the transposed GEMM in blocks of rows matches the reference at every instruction set, and a planted error is caught",
          "[kernels][simd]") {
    const tg::testing::IsaGuard restore;
    const TeamGuard team_restore;
    const SmallConvGuard gemm_path(SmallConv::Never);
    const std::vector<ConvConfig> rows = {
        {"2d 3x3 one image", 1, 1, 12, 6, {{24, 3, 1, 1, 1, 1}, {24, 3, 1, 1, 1, 1}}},
        {"2d k4 s2 batch 6", 6, 1, 10, 8, {{8, 4, 2, 1, 1, 1}, {8, 4, 2, 1, 1, 1}}},
        {"3d groups 2", 2, 2, 5, 3, {{5, 3, 1, 1, 1, 1}, {5, 3, 1, 1, 1, 1}, {5, 3, 1, 1, 1, 1}}},
        {"1d 1x1 long", 2, 1, 30, 4, {{2000, 1}}},
        {"2d 3x3 two images, 32 -> 4", 2, 1, 32, 4, {{32, 3, 1, 1, 1, 1}, {32, 3, 1, 1, 1, 1}}},  // Images, Channels
    };
    std::mt19937_64 rng(3131);
    const std::vector<simd::Isa> isas = tg::testing::tested_isas();
    int team_blocked = 0;
    for (const ConvConfig& c : rows) {
        const ConvGeometry g = transposed_geometry(c);
        // f32 operands (exact in f64 too), the reference made once for every team and set
        const Tensor u = rounded(random_tensor(g.out_shape(), rng), DType::f32);
        const Tensor W = rounded(random_tensor(g.weight_shape(), rng), DType::f32);
        const Tensor want = reference::conv_transposed(u, W, g), scale = reference::conv_transposed(abs_tensor(u), abs_tensor(W), g);
        for (int threads : {1, 2, 3}) {
            set_num_threads(threads);
            force_thread_teams(threads > 1);
            for (simd::Isa isa : isas) {
                simd::force(isa);
                const ConvPlan p =
                    plan_conv(ConvKind::Transposed, g, threads, workspace_budget(), 4, TransposedAlgo::Auto, SmallConv::Never);
                std::int64_t widest = 0;
                for (const ColTile& t : p.tiles) widest = std::max(widest, t.cols());
                const std::string what = describe(c, Layout::NCX, DType::f32) + " at " + simd::isa_name(isa) + ", " +
                                         std::to_string(threads) + " threads";
                INFO(what << ": col part " << p.col_part(g, g.R()) << " of " << g.R() << " x " << widest);
                CHECK(p.row_blocks == (p.strategy != ConvStrategy::Team));
                // Blocks on tapegrad's own GEMM: always at 1 thread; a team's narrower tiles may
                // fit one block, but some plans of a team must block too (checked below).
                const bool blocked = p.row_blocks && p.col_part(g, g.R()) < g.R() * widest;
                if (isa != simd::Isa::scalar && threads == 1) CHECK(blocked);
                if (isa != simd::Isa::scalar && threads > 1 && blocked) ++team_blocked;
                // f64 runs whole on OpenBLAS: no blocks to split among a team
                for (DType dt : threads == 1 ? std::vector<DType>{DType::f32, DType::f64} : std::vector<DType>{DType::f32})
                    check_close(conv_transposed(u.to(dt), W.to(dt), g).to(DType::f64), want, scale, factor_for(dt, g),
                                what + " " + dtype_name(dt));
            }
        }
        set_num_threads(team_restore.n);
        force_thread_teams(false);
        check_planted_weight(ConvKind::Transposed, g, u, W, scale, isas, c.name,
                             [&] { return conv_transposed(u.to(DType::f32), W.to(DType::f32), g).to(DType::f64); });
    }
    if (isas.size() > 1) CHECK(team_blocked >= 8);
}

// The forward or transposed call of row c against the reference, with the result's memory
// dirtied with NaN before each call (the allocator hands the same block back), so a position
// left unwritten shows: tiles of whole images and of parts of one (a 300-byte budget), teams
// of 1-3, every instruction set, f32 (and f64 at one thread), check_plan(plan, budget, what)
// on each plan; then a weight element left out must be seen.
void check_everywhere(ConvKind kind, const ConvConfig& c, std::mt19937_64& rng,
                      const std::function<void(const ConvPlan&, std::int64_t, const std::string&)>& check_plan) {
    const TeamGuard team_restore;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<simd::Isa> isas = tg::testing::tested_isas();
    const bool fwd = kind == ConvKind::Forward;
    const ConvGeometry g = fwd ? forward_geometry(c, Layout::NCX) : transposed_geometry(c);
    const Tensor a = rounded(random_tensor(fwd ? g.in_shape() : g.out_shape(), rng), DType::f32);
    const Tensor W = rounded(random_tensor(g.weight_shape(), rng), DType::f32);
    const Tensor want = reference_of(kind, a, W, g), scale = reference_of(kind, abs_tensor(a), abs_tensor(W), g);
    auto run = [&](DType dt) {
        Tensor::full(fwd ? g.out_shape() : g.in_shape(), nan, dt);  // freed at once: the result's block, dirty
        return (fwd ? conv_forward(a.to(dt), W.to(dt), g) : conv_transposed(a.to(dt), W.to(dt), g)).to(DType::f64);
    };
    for (std::int64_t budget : {std::int64_t{64} << 20, std::int64_t{300}})
        for (int threads : {1, 2, 3}) {
            const WorkspaceGuard ws(budget);
            set_num_threads(threads);
            force_thread_teams(threads > 1);
            for (simd::Isa isa : isas) {
                simd::force(isa);
                const ConvPlan p = plan_conv(kind, g, threads, workspace_budget(), 4, TransposedAlgo::Auto, SmallConv::Never);
                const std::string what = std::string(" at ") + simd::isa_name(isa) + ", budget " + std::to_string(budget) +
                                         ", " + std::to_string(threads) + " threads, " + std::to_string(p.tiles.size()) +
                                         " tiles";
                check_plan(p, budget, what);
                for (DType dt : threads == 1 ? std::vector<DType>{DType::f32, DType::f64} : std::vector<DType>{DType::f32})
                    check_close(run(dt), want, scale, factor_for(dt, g), c.name + what + " " + dtype_name(dt));
            }
        }
    set_num_threads(team_restore.n);
    force_thread_teams(false);
    check_planted_weight(kind, g, a, W, scale, isas, c.name, [&] { return run(DType::f32); });
}

// Disjoint taps (each i-side position reached by at most one tap of one o-side position):
// col2im writes straight from col, two stride-2 phases of a row as one interleave, and zeros
// first where a tile of whole images leaves positions unreached; where the taps cover the
// result, every tile writes its part and the result is not zero-filled (writes_all). Each
// row's disjoint/cover flags are worked out by hand. Small planes of whole images take lane
// permutes instead (the next test); the 24 × 24 rows keep the scatter there too. Checked as
// check_everywhere does.
TEST_CASE("disjoint taps: col2im's scatter matches the reference at every instruction set, and a planted error is caught",
          "[kernels][simd]") {
    const tg::testing::IsaGuard restore;
    const SmallConvGuard gemm_path(SmallConv::Never);
    struct Row {
        ConvConfig c;
        bool disjoint, cover;
        bool scatter = false;  // planes over 64 vectors: whole images take the scatter, not lane permutes
    };
    const std::vector<Row> rows = {
        {{"2d k2 s2 (U-Net's up-conv)", 2, 1, 3, 4, {{6, 2, 2}, {5, 2, 2}}}, true, true},
        {{"2d k2 s2 24x24", 2, 1, 2, 2, {{24, 2, 2}, {24, 2, 2}}}, true, true, true},
        {{"2d k2 s3 24x24", 2, 1, 2, 2, {{24, 2, 3}, {24, 2, 3}}}, true, false, true},
        {{"2d k2 s2 p1 (phases paired across the crop)", 2, 1, 3, 2, {{5, 2, 2, 1, 1, 1}, {6, 2, 2, 1, 1, 1}}}, true, true},
        {{"2d k2 s3 (a phase unreached)", 2, 1, 2, 3, {{5, 2, 3}, {4, 2, 3}}}, true, false},
        {{"2d k2 d2 s3", 1, 1, 3, 3, {{5, 2, 3, 2}, {4, 2, 3, 2}}}, true, false},
        {{"1d k3 s4 output padding 2", 3, 1, 2, 5, {{7, 3, 4, 1, 0, 0, 2}}}, true, false},
        {{"3d k2 s2 groups 2", 2, 2, 2, 3, {{3, 2, 2}, {4, 2, 2}, {3, 2, 2}}}, true, true},
        {{"2d 1x1 s1", 2, 1, 5, 3, {{5, 1}, {6, 1}}}, true, true},
        {{"2d 1x1 s2 output padding 1", 2, 1, 3, 3, {{4, 1, 2, 1, 0, 0, 1}, {3, 1, 2}}}, true, false},
        {{"2d k3 s2 (overlapping: the phase-major path)", 2, 1, 3, 2, {{4, 3, 2, 1, 1, 1}, {4, 3, 2, 1, 1, 1}}}, false, false},
        {{"1d k4 s3 (two taps on one phase)", 2, 1, 2, 2, {{6, 4, 3}}}, false, false},
        // phase rows of 8 and more: interleaved (vec::interleave), with the runs left over
        {{"1d k4 s4 p1 40 (four phases, unequal runs)", 2, 1, 2, 3, {{40, 4, 4, 1, 1, 1}}}, true, true},
        {{"2d k3 s3 24x24 (three phases)", 1, 1, 2, 2, {{24, 3, 3}, {24, 3, 3}}}, true, true, true},
        {{"2d k4 s3 12x12 (overlapping: phase-major rows interleaved back)", 2, 1, 2, 2, {{12, 4, 3}, {12, 4, 3}}},
         false, false, true},
    };
    std::mt19937_64 rng(5353);
    for (const Row& row : rows) {
        const ConvGeometry g = transposed_geometry(row.c);
        INFO(row.c.name);
        CHECK(g.taps_disjoint() == row.disjoint);
        CHECK(g.taps_cover() == row.cover);
        check_everywhere(ConvKind::Transposed, row.c, rng, [&](const ConvPlan& p, std::int64_t, const std::string&) {
            if (row.cover) CHECK(p.writes_all);
            if (row.scatter)
                for (const ColTile& t : p.tiles) CHECK(!col2im_permutes<float>(g, t));
        });
    }
}

// Small planes of whole images: col2im sums each vector of a plane from lane permutes of its
// taps' col vectors and writes it once (vec::permute_sum). DCGAN's 4 × 4 → 8 × 8, source rows
// that end inside a vector (5 × 5, 3 × 3: masked loads), output padding, 3-D with groups,
// 1-D, stride 1, dilation, disjoint taps; the long 1-D row and the plane of over 64 vectors
// keep the runs (the rule: no more permutes than the runs' vector operations). Each row's
// path is checked at every instruction set and both dtypes with tiles of whole images (and
// tiles of parts of an image never permute); results as check_everywhere checks them.
TEST_CASE("col2im's lane permutes match the reference at every instruction set, and a planted error is caught",
          "[kernels][simd]") {
    const tg::testing::IsaGuard restore;
    const SmallConvGuard gemm_path(SmallConv::Never);
    struct Row {
        ConvConfig c;
        bool permutes;
    };
    const std::vector<Row> rows = {
        {{"2d k4 s2 p1 4x4 (DCGAN's)", 3, 1, 3, 4, {{4, 4, 2, 1, 1, 1}, {4, 4, 2, 1, 1, 1}}}, true},
        {{"2d k4 s2 p1 5x5", 2, 1, 2, 3, {{5, 4, 2, 1, 1, 1}, {5, 4, 2, 1, 1, 1}}}, true},
        {{"2d k4 s2 p1 3x3 output padding 1", 3, 1, 2, 2, {{3, 4, 2, 1, 1, 1, 1}, {3, 4, 2, 1, 1, 1}}}, true},
        {{"3d k4 s2 p1 2^3 groups 2", 2, 2, 2, 3, {{2, 4, 2, 1, 1, 1}, {2, 4, 2, 1, 1, 1}, {2, 4, 2, 1, 1, 1}}}, true},
        {{"1d k4 s2 p1 8", 5, 1, 3, 2, {{8, 4, 2, 1, 1, 1}}}, true},
        {{"1d k3 s1 p1 16", 2, 1, 3, 3, {{16, 3, 1, 1, 1, 1}}}, true},
        {{"2d k3 d2 p2 8x8", 2, 1, 2, 3, {{8, 3, 1, 2, 2, 2}, {8, 3, 1, 2, 2, 2}}}, true},
        {{"2d k2 s2 4x4 (disjoint)", 2, 1, 3, 2, {{4, 2, 2}, {4, 2, 2}}}, true},
        {{"2d k3 s1 p1 12x12", 1, 1, 2, 2, {{12, 3, 1, 1, 1, 1}, {12, 3, 1, 1, 1, 1}}}, true},
        {{"1d k4 s2 p1 128 (runs of whole rows)", 2, 1, 2, 2, {{128, 4, 2, 1, 1, 1}}}, false},
        {{"2d k4 s2 p1 24x24 (a plane over 64 vectors)", 1, 1, 2, 2, {{24, 4, 2, 1, 1, 1}, {24, 4, 2, 1, 1, 1}}}, false},
    };
    std::mt19937_64 rng(7171);
    for (const Row& row : rows) {
        const ConvGeometry g = transposed_geometry(row.c);
        INFO(row.c.name);
        check_everywhere(ConvKind::Transposed, row.c, rng, [&](const ConvPlan& p, std::int64_t budget, const std::string& what) {
            REQUIRE(p.strategy != ConvStrategy::Phases);
            INFO(what);
            for (const ColTile& t : p.tiles) {
                const bool whole = t.p0 == 0 && t.p1 == g.out_numel();
                if (budget > 300) REQUIRE(whole);
                CHECK(col2im_permutes<float>(g, t) == (whole && row.permutes));
                CHECK(col2im_permutes<double>(g, t) == (whole && row.permutes));
            }
        });
    }
}

// The forward's im2col on planes of a few vectors: each vector of a panel row gathered from
// the plane's vectors by lane permutes (vec::permute_copy), where they are no more than the
// runs' vector operations. dcgan_g1's forward (8 × 8 → 4 × 4, k4 s2 p1), planes that end
// inside a vector (5 × 5, 7 × 7), 3-D, 1-D, dilation, groups; the long 1-D row keeps the
// runs. The path is checked with the GEMM's panels (two vectors wide) at AVX2 and AVX-512;
// results as check_everywhere checks them (teams of 1-3, whose column ranges cut images
// anywhere; tiles of parts of images; f32 and f64; a weight element left out).
TEST_CASE("im2col's lane gathers match the reference at every instruction set, and a planted error is caught",
          "[kernels][simd]") {
    const tg::testing::IsaGuard restore;
    const SmallConvGuard gemm_path(SmallConv::Never);
    struct Row {
        ConvConfig c;
        bool gathers;
    };
    const std::vector<Row> rows = {
        {{"2d k4 s2 p1 8x8 (dcgan_g1's forward)", 3, 1, 4, 3, {{8, 4, 2, 1, 1, 1}, {8, 4, 2, 1, 1, 1}}}, true},
        {{"2d k3 s2 p1 5x5", 2, 1, 3, 2, {{5, 3, 2, 1, 1, 1}, {5, 3, 2, 1, 1, 1}}}, true},
        {{"2d k3 p1 7x7 groups 2", 2, 2, 2, 3, {{7, 3, 1, 1, 1, 1}, {7, 3, 1, 1, 1, 1}}}, true},
        {{"3d k4 s2 p1 4^3", 2, 1, 2, 2, {{4, 4, 2, 1, 1, 1}, {4, 4, 2, 1, 1, 1}, {4, 4, 2, 1, 1, 1}}}, true},
        {{"1d k4 s2 p1 16", 4, 1, 3, 2, {{16, 4, 2, 1, 1, 1}}}, true},
        {{"2d k3 d2 p2 8x8", 2, 1, 2, 2, {{8, 3, 1, 2, 2, 2}, {8, 3, 1, 2, 2, 2}}}, true},
        {{"1d k4 s2 p1 256 (runs of whole rows)", 2, 1, 2, 2, {{256, 4, 2, 1, 1, 1}}}, false},
    };
    std::mt19937_64 rng(9191);
    for (const Row& row : rows) {
        const ConvGeometry g = forward_geometry(row.c, Layout::NCX);
        INFO(row.c.name);
        for (simd::Isa isa : tg::testing::tested_isas()) {
            if (isa == simd::Isa::scalar) continue;
            simd::force(isa);
            const std::int64_t V = vec::permute_bytes<float>() / 4;
            const ConvPlan p = plan_conv(ConvKind::Forward, g, 1, workspace_budget(), 4, TransposedAlgo::Auto, SmallConv::Never);
            for (const ColTile& t : p.tiles)
                CHECK(im2col_gathers<float>(g, t, 0, t.cols(), PanelLayout{1, 2 * V, 2 * V * g.R()}) == row.gathers);
        }
        check_everywhere(ConvKind::Forward, row.c, rng, [](const ConvPlan&, std::int64_t, const std::string&) {});
    }
}

namespace {

// `f` on the direct path `path` against the GEMM path where operands hold infinities or NaNs:
// NaN where it has NaN, the same value elsewhere (`exact`), or at least the same infinities;
// and some non-finite result, so that the case is not vacuous.
void check_same_nonfinite(SmallConv path, const std::function<Tensor()>& f, bool exact) {
    std::vector<double> gemm, direct;
    {
        const SmallConvGuard sc(SmallConv::Never);
        gemm = f().values();
    }
    {
        const SmallConvGuard sc(path);
        direct = f().values();
    }
    REQUIRE(gemm.size() == direct.size());
    std::size_t nonfinite = 0, differ = 0;
    for (std::size_t i = 0; i < gemm.size(); ++i) {
        nonfinite += !std::isfinite(gemm[i]);
        if (std::isnan(gemm[i]) != std::isnan(direct[i])) ++differ;
        else if (!std::isnan(gemm[i]) && (exact || std::isinf(gemm[i])) && gemm[i] != direct[i]) ++differ;
    }
    CHECK(differ == 0);
    CHECK(nonfinite > 0);
}

}  // namespace

TEST_CASE("the direct kernels give the GEMM path's results on non-finite operands", "[kernels][small][rows]") {
    std::mt19937_64 rng(1313);
    const ConvConfig c{"2d stride2 pad1 op", 2, 1, 5, 6, {{6, 3, 2, 1, 1, 1, 1}, {5, 3, 2, 1, 1, 1, 1}}};
    const ConvGeometry g = transposed_geometry(c, Layout::NCX);
    Tensor x = random_tensor(g.in_shape(), rng).to(DType::f32), u = random_tensor(g.out_shape(), rng).to(DType::f32);
    Tensor W = random_tensor(g.weight_shape(), rng).to(DType::f32);
    x.data<float>()[7] = std::numeric_limits<float>::infinity();
    x.data<float>()[20] = std::numeric_limits<float>::quiet_NaN();
    u.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
    W.data<float>()[4] = -std::numeric_limits<float>::infinity();
    const auto transposed = [&] { return conv_transposed(u, W, g); };
    const auto forward = [&] { return conv_forward(x, W, g); };
    const auto weight_grad = [&] { return conv_weight_grad(x, u, g); };
    struct Case {
        SmallConv path;
        const char* op;
        std::function<Tensor()> f;
        bool exact;
    };
    for (const Case& k : {Case{SmallConv::Always, "transposed", transposed, true}, Case{SmallConv::Always, "weight grad", weight_grad, true},
                          Case{SmallConv::Rows, "transposed", transposed, true}, Case{SmallConv::Rows, "forward", forward, false},
                          Case{SmallConv::Rows, "weight grad", weight_grad, true}}) {
        INFO(k.op << path_name(k.path));
        check_same_nonfinite(k.path, k.f, k.exact);
    }
    // A NaN in x alone, at its last element (the last image's last channel), with u and W
    // finite: the small-channel weight gradient declines as well (its check covers all of x).
    Tensor xl = random_tensor(g.in_shape(), rng).to(DType::f32), ul = random_tensor(g.out_shape(), rng).to(DType::f32);
    xl.data<float>()[xl.numel() - 1] = std::numeric_limits<float>::quiet_NaN();
    check_same_nonfinite(SmallConv::Always, [&] { return conv_weight_grad(xl, ul, g); }, true);
}

TEST_CASE("conv kernels satisfy the adjoint identities on every table row", "[kernels]") {
    std::mt19937_64 rng(7);
    for (SmallConv path : conv_paths())
    for (const ConvConfig& c : conv_table()) {
        const SmallConvGuard sc(path);
        const WorkspaceGuard ws(c.budget);
        for (Layout layout : {Layout::NCX, Layout::NXC})
            for (DType dt : {DType::f64, DType::f32}) {
                check_adjoint(forward_geometry(c, layout), dt, rng, describe(c, layout, dt) + " forward_geometry");
                check_adjoint(transposed_geometry(c, layout), dt, rng, describe(c, layout, dt) + " transposed_geometry");
            }
    }
}

TEST_CASE("f16 and bf16 kernels match the f64 result within epsilon-scaled tolerances", "[kernels]") {
    std::mt19937_64 rng(1234);
    for (const ConvConfig& c : conv_table()) {
        const WorkspaceGuard ws(c.budget);
        for (Layout layout : {Layout::NCX, Layout::NXC})
            for (DType dt : {DType::f16, DType::bf16}) {
                check_against_reference(forward_geometry(c, layout), dt, rng, describe(c, layout, dt) + " forward_geometry");
                check_against_reference(transposed_geometry(c, layout), dt, rng,
                                        describe(c, layout, dt) + " transposed_geometry");
            }
    }
}

// A budget below one image makes the 16-bit path cut each image into bands of rows of
// spatial axis 0 (one row per band at this budget): bands that start inside padding, bands
// whose rows read no input, strides longer than the kernel, and o-side rows shared by
// neighbouring bands all occur on the table's rows.
TEST_CASE("f16 and bf16 kernels on bands of rows of one image match the f64 result", "[kernels]") {
    const WorkspaceGuard ws(64);
    std::mt19937_64 rng(4321);
    for (const ConvConfig& c : conv_table())
        for (Layout layout : {Layout::NCX, Layout::NXC})
            for (DType dt : {DType::f16, DType::bf16}) {
                check_against_reference(forward_geometry(c, layout), dt, rng, describe(c, layout, dt) + " forward_geometry, bands");
                check_against_reference(transposed_geometry(c, layout), dt, rng,
                                        describe(c, layout, dt) + " transposed_geometry, bands");
            }
}

TEST_CASE("the f64 tolerance is tight enough to see a 1e-9 relative error", "[kernels]") {
    // Guards the checks above against a tolerance so loose that they cannot fail: perturbing
    // the f64 weight by a relative 1e-9 must already break the f64 comparison.
    std::mt19937_64 rng(99);
    const ConvConfig& c = conv_table().front();
    const ConvGeometry g = forward_geometry(c, Layout::NCX);
    const Tensor x = random_tensor(g.in_shape(), rng), W = random_tensor(g.weight_shape(), rng);
    std::vector<double> wv = W.values();
    wv[0] *= 1 + 1e-9;
    const Tensor y = conv_forward(x, Tensor::from(W.shape(), wv, DType::f64), g);
    const std::vector<double> got = y.values(), want = reference::conv_forward(x, W, g).values(),
                              scale = reference::conv_forward(abs_tensor(x), abs_tensor(W), g).values();
    bool any_out = false;
    for (std::size_t i = 0; i < got.size(); ++i) any_out |= std::fabs(got[i] - want[i]) > factor_for(DType::f64, g) * scale[i];
    CHECK(any_out);
}

TEST_CASE("conv kernels with N = 0 give empty results of the right shape", "[kernels]") {
    std::mt19937_64 rng(5);
    for (ConvConfig c : conv_table()) {
        c.N = 0;
        for (Layout layout : {Layout::NCX, Layout::NXC})
            for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16})
                for (const ConvGeometry& g : {forward_geometry(c, layout), transposed_geometry(c, layout)}) {
                    INFO(describe(c, layout, dt));
                    const Tensor x = Tensor::zeros(g.in_shape(), dt), u = Tensor::zeros(g.out_shape(), dt);
                    const Tensor W = random_tensor(g.weight_shape(), rng).to(dt);
                    const Tensor y = conv_forward(x, W, g);
                    CHECK(y.shape() == g.out_shape());
                    CHECK(y.numel() == 0);
                    CHECK(y.dtype() == dt);
                    const Tensor r = conv_transposed(u, W, g);
                    CHECK(r.shape() == g.in_shape());
                    CHECK(r.numel() == 0);
                    CHECK(r.dtype() == dt);
                    // No images: the weight gradient is an all-zero sum, not an empty tensor.
                    const Tensor dW = conv_weight_grad(x, u, g);
                    CHECK(dW.shape() == g.weight_shape());
                    CHECK(dW.dtype() == dt);
                    const std::vector<double> v = dW.values();
                    CHECK(std::all_of(v.begin(), v.end(), [](double e) { return e == 0.0; }));
                }
    }
}

TEST_CASE("conv kernels reject operands that do not fit the geometry", "[kernels]") {
    const ConvConfig& c = conv_table().front();
    const ConvGeometry g = forward_geometry(c, Layout::NCX);
    const Tensor x = Tensor::zeros(g.in_shape(), DType::f64), W = Tensor::zeros(g.weight_shape(), DType::f64);
    const Tensor u = Tensor::zeros(g.out_shape(), DType::f64);
    Shape bad = g.in_shape();
    bad.back() += 1;
    try {
        conv_forward(Tensor::zeros(bad, DType::f64), W, g);
        FAIL("conv_forward accepted a data tensor of the wrong shape");
    } catch (const Error& e) {
        CHECK(e.key() == "data");
    }
    try {
        conv_transposed(u, Tensor::zeros({1, 1, 1, 1}, DType::f64), g);
        FAIL("conv_transposed accepted a filter of the wrong shape");
    } catch (const Error& e) {
        CHECK(e.key() == "filter");
    }
    try {
        conv_weight_grad(x, x, g);
        FAIL("conv_weight_grad accepted a grad_output of the wrong shape");
    } catch (const Error& e) {
        CHECK(e.key() == "grad_output");
    }
    CHECK_THROWS_AS(conv_forward(x, W.to(DType::f32), g), Error);  // mixed dtypes
    CHECK_THROWS_AS(set_workspace_budget(0), Error);
}
