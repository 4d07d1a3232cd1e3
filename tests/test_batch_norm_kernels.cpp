// Batch normalisation's per-channel kernels (tapegrad/ops/batch_norm.hpp) at every
// instruction set the processor has, f32 and f64, against the formulas computed here in
// f64 element by element; runs of 1, 63 and 200 values reach the vector loops' bodies and
// tails. The comparison sees a planted error (one value of the reference moved by 1e-4 of
// its scale).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "isas.hpp"
#include "tapegrad/core/simd.hpp"
#include "tapegrad/ops/batch_norm.hpp"

using namespace tg;

namespace {

struct BnCase {
    Shape shape;  // [N, C, X...]
};

std::vector<double> uniform(std::size_t n, std::mt19937_64& rng, double lo, double hi) {
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<double> v(n);
    for (double& e : v) e = u(rng);
    return v;
}

// Elements with |got − want| > tol·(scale + |want|).
std::size_t bad(const std::vector<double>& got, const std::vector<double>& want, double scale, double tol) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (!(std::fabs(got[i] - want[i]) <= tol * (scale + std::fabs(want[i])))) ++n;
    return n;
}

// The four kernels' results and their f64 formulas on one input.
struct Results {
    std::vector<double> got, want;
};

Results run(const BnCase& c, DType dt, std::mt19937_64& rng) {
    const std::int64_t N = c.shape[0], C = c.shape[1], S = shape_numel(c.shape) / (N * C);
    const std::size_t n = static_cast<std::size_t>(shape_numel(c.shape));
    // Values as the dtype holds them, so that both sides see the same inputs.
    const Tensor x = Tensor::from(c.shape, uniform(n, rng, -2, 3), DType::f64).to(dt);
    const Tensor g = Tensor::from(c.shape, uniform(n, rng, -1, 1), DType::f64).to(dt);
    const std::vector<double> xv = x.values(), gv = g.values();
    const std::vector<double> scale = uniform(static_cast<std::size_t>(C), rng, 0.5, 2), shift = uniform(static_cast<std::size_t>(C), rng, -1, 1);
    auto at = [&](std::int64_t i, std::int64_t ch, std::int64_t s) { return static_cast<std::size_t>((i * C + ch) * S + s); };
    Results r;
    auto add = [&](const std::vector<double>& got, const std::vector<double>& want) {
        r.got.insert(r.got.end(), got.begin(), got.end());
        r.want.insert(r.want.end(), want.begin(), want.end());
    };
    // moments
    std::vector<double> mean(static_cast<std::size_t>(C)), var(static_cast<std::size_t>(C));
    for (std::int64_t ch = 0; ch < C; ++ch) {
        double s = 0, q = 0;
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t k = 0; k < S; ++k) s += xv[at(i, ch, k)];
        mean[static_cast<std::size_t>(ch)] = s / static_cast<double>(N * S);
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t k = 0; k < S; ++k) q += std::pow(xv[at(i, ch, k)] - mean[static_cast<std::size_t>(ch)], 2);
        var[static_cast<std::size_t>(ch)] = q / static_cast<double>(N * S);
    }
    const ChannelMoments m = channel_moments(x);
    add(m.mean, mean);
    add(m.var, var);
    // affine, with and without the ReLU; sums and the input gradient through it
    for (bool relu : {false, true}) {
        const Tensor y = channel_affine(x, scale, shift, mean, relu);
        std::vector<double> yw(n), sg(static_cast<std::size_t>(C), 0), sgx(static_cast<std::size_t>(C), 0), dxw(n);
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t ch = 0; ch < C; ++ch)
                for (std::int64_t k = 0; k < S; ++k) {
                    const std::size_t e = at(i, ch, k), cc = static_cast<std::size_t>(ch);
                    const double v = (xv[e] - mean[cc]) * scale[cc] + shift[cc];
                    yw[e] = relu && v < 0 ? 0 : v;
                }
        add(y.values(), yw);
        const std::vector<double> yv = y.values();  // the ReLU's output as the kernel made it
        auto through = [&](std::size_t e) { return !relu || yv[e] > 0 ? gv[e] : 0.0; };
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t ch = 0; ch < C; ++ch)
                for (std::int64_t k = 0; k < S; ++k) {
                    const std::size_t e = at(i, ch, k), cc = static_cast<std::size_t>(ch);
                    sg[cc] += through(e);
                    sgx[cc] += through(e) * (xv[e] - mean[cc]);
                }
        const ChannelSums s = channel_sums(g, x, mean, relu ? y : Tensor());
        add(s.g, sg);
        add(s.gx, sgx);
        std::vector<double> invstd(static_cast<std::size_t>(C)), sgxhat(static_cast<std::size_t>(C));
        for (std::size_t cc = 0; cc < invstd.size(); ++cc) {
            invstd[cc] = 1 / std::sqrt(var[cc] + 1e-5);
            sgxhat[cc] = invstd[cc] * sgx[cc];
        }
        const double cnt = static_cast<double>(N * S);
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t ch = 0; ch < C; ++ch)
                for (std::int64_t k = 0; k < S; ++k) {
                    const std::size_t e = at(i, ch, k), cc = static_cast<std::size_t>(ch);
                    const double xhat = (xv[e] - mean[cc]) * invstd[cc];
                    dxw[e] = scale[cc] * invstd[cc] * (through(e) - sg[cc] / cnt - xhat * sgxhat[cc] / cnt);
                }
        add(batch_norm_input_grad(g, x, mean, invstd, scale, sg, sgxhat, relu ? y : Tensor()).values(), dxw);
    }
    return r;
}

}  // namespace

TEST_CASE("batch norm kernels match their formulas at every instruction set; a planted error is caught",
          "[batch_norm][simd]") {
    const tg::testing::IsaGuard restore;
    const std::vector<BnCase> cases = {{{4, 3}}, {{3, 5, 7, 9}}, {{2, 4, 200}}, {{5, 2, 3, 2, 2}}};
    for (simd::Isa isa : tg::testing::tested_isas()) {
        simd::force(isa);
        std::mt19937_64 rng(404);
        for (const BnCase& c : cases)
            for (DType dt : {DType::f32, DType::f64}) {
                const Results r = run(c, dt, rng);
                // Sums of up to a few thousand terms of size ~10: relative error a few hundred
                // ulps of the compute type, on a scale of 10.
                const double tol = dt == DType::f32 ? 2e-5 : 1e-12, scale = 10;
                INFO(shape_str(c.shape) << " " << dtype_name(dt) << " at " << simd::isa_name(isa));
                CHECK(bad(r.got, r.want, scale, tol) == 0);
                std::vector<double> planted = r.want;
                planted[planted.size() / 2] += 1e-4 * scale;
                CHECK(bad(r.got, planted, scale, dt == DType::f32 ? 2e-5 : 1e-12) > 0);
            }
    }
}
