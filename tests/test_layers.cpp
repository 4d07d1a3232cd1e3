// tapegrad/nn/layers.hpp and the module modes: train/eval propagation, pooling values and
// gradients by hand.
#include <catch2/catch.hpp>

#include "isas.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tapegrad/autograd/batch_norm.hpp"
#include "tapegrad/autograd/conv.hpp"
#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/autograd/pool.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/ops/matmul.hpp"
#include "tapegrad/nn/layers.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/schedule.hpp"
#include "tensor_helpers.hpp"

using namespace tg;
using testing::rnd;
using testing::vals;

TEST_CASE("train() and eval() set the mode of a module and all its sub-modules", "[nn][layers]") {
    nn::Sequential inner{nn::Linear(2, 2), nn::ReLU()};
    nn::Sequential net;
    net.add(nn::Linear(2, 2));
    net.add(std::move(inner));
    CHECK(net.is_training());
    CHECK(net[1]->is_training());
    nn::Module& r = net.eval();
    CHECK(&r == &net);
    CHECK_FALSE(net.is_training());
    CHECK_FALSE(net[0]->is_training());
    const auto& sub = static_cast<const nn::Sequential&>(*net[1]);
    CHECK_FALSE(sub.is_training());
    CHECK_FALSE(sub[0]->is_training());
    CHECK_FALSE(sub[1]->is_training());
    net.train();
    CHECK(sub[1]->is_training());
    net[1]->train(false);  // a sub-tree alone
    CHECK(net.is_training());
    CHECK_FALSE(sub[0]->is_training());
    CHECK(net[0]->is_training());
}

TEST_CASE("max pooling of a 1x1x4x4 image by hand", "[nn][layers][pool]") {
    const Tensor x = Tensor::from({1, 1, 4, 4}, {1, 5, 2, 0,  //
                                                 3, 4, 8, 7,  //
                                                 9, 0, 1, 1,  //
                                                 2, 6, 3, 4},
                                  DType::f64);
    const ag::Variable xv = ag::param(x);
    nn::MaxPool pool(nn::PoolOptions{2, 2});
    const ag::Variable y = pool(xv);
    CHECK(y.shape() == Shape{1, 1, 2, 2});
    CHECK(vals(y) == std::vector<double>{5, 8, 9, 4});
    CHECK(ag::max_pool_indices(x, pool.geometry(x.shape())).values() == std::vector<double>{1, 6, 8, 15});
    ag::sum(ag::mul(y, ag::constant(Tensor::from({1, 1, 2, 2}, {1, 2, 3, 4}, DType::f64)))).backward();
    CHECK(xv.grad().values() == std::vector<double>{0, 1, 0, 0, 0, 0, 2, 0, 3, 0, 0, 0, 0, 0, 0, 4});

    // 3x3 windows, stride 1, padding 1: overlapping windows add their gradients; the
    // padding never wins, even over negative values
    const ag::Variable xn = ag::param(ag::neg(ag::constant(x)).value());
    nn::MaxPool p3(nn::PoolOptions{3, 3}.stride(1).padding(1));
    const ag::Variable y3 = p3(xn);
    CHECK(y3.shape() == Shape{1, 1, 4, 4});
    CHECK(vals(y3) == std::vector<double>{-1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, -1});
    ag::sum(y3).backward();
    // the zeros at (0,3) and (2,1) win most windows; where both are in one window the
    // first in window order wins
    CHECK(xn.grad().values() == std::vector<double>{2, 0, 0, 4, 0, 0, 0, 0, 0, 8, 2, 0, 0, 0, 0, 0});
}

TEST_CASE("pooling sizes, 1-D and 3-D, and average pooling counts the padding", "[nn][layers][pool]") {
    // 1-D: windows of 2, stride 2 (the default), floor mode drops the last element
    const ag::Variable x1 = ag::constant(Tensor::from({1, 2, 5}, {1, 2, 3, 4, 5, -1, -2, -3, -4, -5}, DType::f64));
    CHECK(vals(nn::MaxPool(nn::PoolOptions{2})(x1)) == std::vector<double>{2, 4, -1, -3});
    CHECK(vals(nn::AvgPool(nn::PoolOptions{2})(x1)) == std::vector<double>{1.5, 3.5, -1.5, -3.5});
    // padding 1: an edge window holds one element and one padded zero, and is divided by 2
    CHECK(vals(nn::AvgPool(nn::PoolOptions{2}.padding(1))(x1)) == std::vector<double>{0.5, 2.5, 4.5, -0.5, -2.5, -4.5});
    // 3-D: [1, 1, 2, 4, 4] with 2x2x2 windows -> [1, 1, 1, 2, 2]
    std::vector<double> v(32);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
    const ag::Variable x3 = ag::constant(Tensor::from({1, 1, 2, 4, 4}, v, DType::f64));
    const ag::Variable m3 = nn::MaxPool(nn::PoolOptions{2, 2, 2})(x3);
    CHECK(m3.shape() == Shape{1, 1, 1, 2, 2});
    CHECK(vals(m3) == std::vector<double>{21, 23, 29, 31});
    // average of {0,1,4,5,16,17,20,21} = 10.5
    CHECK(vals(nn::AvgPool(nn::PoolOptions{2, 2, 2})(x3))[0] == Approx(10.5));
    // the layers work in f32 too
    CHECK(nn::MaxPool(nn::PoolOptions{2})(ag::constant(x1.value().to(DType::f32))).value().values() ==
          std::vector<double>{2, 4, -1, -3});
    CHECK_THROWS_WITH(nn::MaxPool(nn::PoolOptions{2}.padding(2)), Catch::Contains("half the kernel"));
    CHECK_THROWS_WITH(nn::MaxPool(nn::PoolOptions{2, 2})(x1), Catch::Contains("[1, 2, 5]"));
    CHECK_THROWS_WITH(nn::AvgPool(nn::PoolOptions{7})(x1), Catch::Contains("AvgPool"));
}

TEST_CASE("max pooling propagates NaN as PyTorch does", "[nn][layers][pool]") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const ag::Variable x = ag::constant(Tensor::from({1, 1, 4}, {1, nan, 3, 2}, DType::f64));
    const auto y = vals(nn::MaxPool(nn::PoolOptions{2})(x));
    CHECK(std::isnan(y[0]));
    CHECK(y[1] == 3);
}

TEST_CASE("batch norm in training mode: gradcheck and gradgradcheck of the fused op", "[nn][layers][batchnorm][gradcheck]") {
    struct Case {
        const char* name;
        Shape x;
    };
    for (const Case& c : {Case{"[N, C]", {5, 3}}, Case{"1-D", {3, 2, 4}}, Case{"2-D", {2, 3, 3, 2}}, Case{"3-D", {2, 2, 2, 2, 3}}}) {
        INFO(c.name);
        const std::int64_t C = c.x[1];
        const ag::Function f = [](const std::vector<ag::Variable>& v) {
            const ag::Variable y = nn::batch_norm_train(v[0], v[1], v[2], 1e-5);
            return ag::mul(y, y);  // a non-linear use, so second derivatives involve every piece
        };
        const std::vector<Tensor> inputs{rnd(c.x, 1, -2, 2), rnd({C}, 2, 0.5, 1.5), rnd({C}, 3)};
        ag::CheckOptions opt;
        const ag::CheckReport g1 = ag::gradcheck(f, inputs, opt);
        INFO(g1.table());
        CHECK(g1.ok);
        const ag::CheckReport g2 = ag::gradgradcheck(f, inputs, opt);
        INFO(g2.table());
        CHECK(g2.ok);
    }
}

namespace {

// Batch norm in training mode composed of the plain differentiable ops (what the fused
// ag::batch_norm replaced): the oracle of its values and gradients.
ag::Variable batch_norm_composed(const ag::Variable& x, const ag::Variable& w, const ag::Variable& b, double eps) {
    std::vector<int> axes{0};
    for (int a = 2; a < x.ndim(); ++a) axes.push_back(a);
    Shape st(x.shape().size(), 1);
    st[1] = x.shape()[1];
    const ag::Variable d = ag::sub(x, ag::mean(x, axes, true));
    ag::Variable y = ag::mul(d, ag::rsqrt(ag::affine(ag::mean(ag::mul(d, d), axes, true), 1, eps)));
    if (w.defined()) y = ag::mul(y, ag::reshape(w, st));
    if (b.defined()) y = ag::add(y, ag::reshape(b, st));
    return y;
}

using testing::check_close;

}  // namespace

TEST_CASE("the fused batch norm matches the composition of plain ops, values and gradients", "[nn][layers][batchnorm]") {
    struct Case {
        const char* name;
        Shape x;
        bool weight, bias;
        double offset;  // added to x: a mean far from 0 tests the two-pass variance
    };
    for (const Case& c : {Case{"[N, C]", {7, 3}, true, true, 0}, Case{"1-D, no bias", {3, 2, 5}, true, false, 0},
                          Case{"2-D, no weight", {4, 3, 5, 6}, false, true, 0}, Case{"2-D, offset", {8, 4, 7, 7}, true, true, 50},
                          Case{"3-D, neither", {2, 2, 3, 2, 4}, false, false, 0}})
        for (DType dt : {DType::f64, DType::f32}) {
            INFO(c.name << " " << dtype_name(dt));
            const std::int64_t C = c.x[1];
            const Tensor x0 = ag::affine(ag::constant(rnd(c.x, 11, -2, 2)), 1, c.offset).value().to(dt);
            const Tensor gy = rnd(c.x, 12).to(dt);
            auto run = [&](bool fused, bool create_graph) {
                const ag::Variable x = ag::param(x0);
                const ag::Variable w = c.weight ? ag::param(rnd({C}, 13, 0.5, 1.5).to(dt)) : ag::Variable();
                const ag::Variable b = c.bias ? ag::param(rnd({C}, 14).to(dt)) : ag::Variable();
                const ag::Variable y = fused ? ag::batch_norm(x, w, b, 1e-5) : batch_norm_composed(x, w, b, 1e-5);
                std::vector<ag::Variable> in{x};
                if (w.defined()) in.push_back(w);
                if (b.defined()) in.push_back(b);
                std::vector<Tensor> out{y.value()};
                for (const ag::Variable& g : ag::grad({y}, in, {ag::constant(gy)}, false, create_graph)) out.push_back(g.value());
                return out;
            };
            const double tol = dt == DType::f64 ? 1e-12 : 2e-5;
            const std::vector<Tensor> ref = run(false, false), fast = run(true, false), graph = run(true, true);
            REQUIRE(fast.size() == ref.size());
            for (std::size_t i = 0; i < ref.size(); ++i) {
                check_close(fast[i], ref[i], tol, i == 0 ? "y" : "a gradient, fused kernels");
                check_close(graph[i], ref[i], tol, i == 0 ? "y" : "a gradient, the create_graph form");
            }
        }
}

TEST_CASE("batch norm with a fused ReLU equals relu(batch_norm(x)): values, gradients, checks", "[nn][layers][batchnorm]") {
    // The oracle is the unfused pair ag::relu(ag::batch_norm(...)); about half the outputs
    // are cut to 0, so the ReLU's gradient rule shapes every input gradient.
    for (DType dt : {DType::f64, DType::f32})
        for (bool create_graph : {false, true}) {
            INFO(dtype_name(dt) << (create_graph ? " create_graph" : ""));
            const Shape xs{4, 3, 5, 6};
            const Tensor x0 = rnd(xs, 31, -2, 2).to(dt), gy = rnd(xs, 32).to(dt);
            auto run = [&](bool fused) {
                const ag::Variable x = ag::param(x0), w = ag::param(rnd({3}, 33, 0.5, 1.5).to(dt)),
                                   b = ag::param(rnd({3}, 34, -0.5, 0.5).to(dt));
                const ag::Variable y = fused ? ag::batch_norm(x, w, b, 1e-5, nullptr, nullptr, true)
                                             : ag::relu(ag::batch_norm(x, w, b, 1e-5));
                std::vector<Tensor> out{y.value()};
                for (const ag::Variable& g : ag::grad({y}, {x, w, b}, {ag::constant(gy)}, false, create_graph))
                    out.push_back(g.value());
                return out;
            };
            const std::vector<Tensor> ref = run(false), fused = run(true);
            const auto yv = fused[0].values();
            CHECK(std::count(yv.begin(), yv.end(), 0.0) > static_cast<std::ptrdiff_t>(yv.size() / 4));
            CHECK(fused[0].values() == ref[0].values());  // the same operations
            // (the gradients' sums may be vectorised in another order: the last bits differ)
            const double tol = dt == DType::f64 ? 1e-12 : 2e-5;
            for (std::size_t i = 1; i < ref.size(); ++i) check_close(fused[i], ref[i], tol, "a gradient through the fused ReLU");
        }
    // gradcheck and gradgradcheck of the fused op (f64 finite differences)
    const ag::Function f = [](const std::vector<ag::Variable>& v) {
        const ag::Variable y = ag::batch_norm(v[0], v[1], v[2], 1e-5, nullptr, nullptr, true);
        return ag::mul(y, y);
    };
    const std::vector<Tensor> inputs{rnd({3, 2, 4}, 35, -2, 2), rnd({2}, 36, 0.5, 1.5), rnd({2}, 37)};
    const ag::CheckReport g1 = ag::gradcheck(f, inputs);
    INFO(g1.table());
    CHECK(g1.ok);
    const ag::CheckReport g2 = ag::gradgradcheck(f, inputs);
    INFO(g2.table());
    CHECK(g2.ok);
    // The layer: BatchNorm(C).with_relu() is BatchNorm then ReLU, in training and in evaluation.
    nn::BatchNorm fused(3), plain(3);
    fused.with_relu();
    CHECK(fused.has_relu());
    CHECK(fused.repr() == "BatchNorm(3, eps=1e-05, momentum=0.1, relu)");
    const ag::Variable x = ag::constant(rnd({4, 3, 5}, 38, -2, 2).to(DType::f32));
    CHECK(fused(x).value().values() == nn::ReLU()(plain(x)).value().values());
    fused.eval();
    plain.eval();
    CHECK(fused(x).value().values() == nn::ReLU()(plain(x)).value().values());
    CHECK(fused.running_mean().values() == plain.running_mean().values());
}

TEST_CASE("batch norm in evaluation mode: values, gradients and gradcheck of channel_affine", "[nn][layers][batchnorm][gradcheck]") {
    const Tensor x = rnd({3, 2, 4}, 21, -2, 2), mean = rnd({2}, 22), var = rnd({2}, 23, 0.5, 2);
    const Tensor w = rnd({2}, 24, 0.5, 1.5), b = rnd({2}, 25);
    // values by hand: (x − mean[c])/√(var[c] + eps)·w[c] + b[c]
    const auto y = vals(nn::batch_norm_eval(ag::constant(x), mean, var, ag::constant(w), ag::constant(b), 1e-3));
    const auto xv = x.values(), mv = mean.values(), vv = var.values(), wv = w.values(), bv = b.values();
    for (std::size_t i = 0; i < xv.size(); ++i) {
        const std::size_t c = i / 4 % 2;
        CHECK(y[i] == Approx((xv[i] - mv[c]) / std::sqrt(vv[c] + 1e-3) * wv[c] + bv[c]).epsilon(1e-13));
    }
    const ag::Function f = [&](const std::vector<ag::Variable>& v) {
        const ag::Variable e = nn::batch_norm_eval(v[0], mean, var, v[1], v[2], 1e-3);
        return ag::mul(e, e);
    };
    const ag::CheckReport g1 = ag::gradcheck(f, {x, w, b});
    INFO(g1.table());
    CHECK(g1.ok);
    const ag::CheckReport g2 = ag::gradgradcheck(f, {x, w, b});
    INFO(g2.table());
    CHECK(g2.ok);
    CHECK_THROWS_WITH(nn::batch_norm_eval(ag::constant(x), mean, var, ag::constant(rnd({3}, 1)), ag::Variable()),
                      Catch::Contains("weight has shape [3]"));
}

TEST_CASE("2-D max pooling (its own kernel) matches the N-d window-map kernel on a unit depth axis", "[nn][layers][pool]") {
    struct Case {
        Shape input, kernel, stride, padding, dilation;
    };
    // Small integers: ties everywhere, so the first-in-window-order rule is exercised; NaNs
    // and infinities. Rows wider than a vector (several vectors per output row), odd widths,
    // strides past 2, and planes tall enough for several staged bands.
    testing::IsaGuard guard;
    for (simd::Isa isa : testing::tested_isas()) {
        simd::force(isa);
        for (const Case& c : {Case{{2, 3, 9, 11}, {2, 2}, {2, 2}, {0, 0}, {1, 1}}, Case{{2, 3, 9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
                              Case{{2, 3, 9, 11}, {3, 2}, {1, 2}, {1, 0}, {2, 1}}, Case{{2, 3, 9, 11}, {2, 3}, {3, 1}, {1, 1}, {1, 2}},
                              Case{{2, 3, 9, 11}, {1, 1}, {1, 1}, {0, 0}, {1, 1}}, Case{{1, 2, 7, 75}, {2, 2}, {2, 2}, {0, 0}, {1, 1}},
                              Case{{1, 2, 6, 70}, {3, 5}, {1, 3}, {1, 2}, {1, 1}}, Case{{1, 1, 300, 130}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
                              // 2 × 2, stride 2 (the common layer): rows of whole vectors, short tails, odd sizes
                              Case{{2, 3, 28, 28}, {2, 2}, {2, 2}, {0, 0}, {1, 1}}, Case{{1, 2, 5, 64}, {2, 2}, {2, 2}, {0, 0}, {1, 1}},
                              Case{{1, 2, 6, 35}, {2, 2}, {2, 2}, {0, 0}, {1, 1}}, Case{{1, 1, 3, 2}, {2, 2}, {2, 2}, {0, 0}, {1, 1}}})
            for (DType dt : {DType::f64, DType::f32}) {
                INFO(simd::isa_name(isa) << " input " << shape_str(c.input) << " kernel " << shape_str(c.kernel) << " stride "
                                         << shape_str(c.stride) << " pad " << shape_str(c.padding) << " dilation "
                                         << shape_str(c.dilation) << " " << dtype_name(dt));
                Generator gen(5);
                std::vector<double> v(static_cast<std::size_t>(shape_numel(c.input)));
                for (double& e : v) e = std::floor(gen.uniform() * 4) - 2;
                for (std::size_t i = 40; i < v.size(); i += 97) v[i] = std::numeric_limits<double>::quiet_NaN();
                for (std::size_t i = 13; i < v.size(); i += 89) v[i] = -std::numeric_limits<double>::infinity();
                const Tensor x2 = Tensor::from(c.input, v, dt);
                Shape s3 = c.input;
                s3.insert(s3.begin() + 2, 1);
                const Tensor x3 = x2.reshape(s3);
                auto with_depth = [](Shape s, std::int64_t d) {
                    s.insert(s.begin(), d);
                    return s;
                };
                const ConvGeometry g2 = ag::pool_geometry(x2.shape(), c.kernel, c.stride, c.padding, c.dilation);
                const ConvGeometry g3 = ag::pool_geometry(x3.shape(), with_depth(c.kernel, 1), with_depth(c.stride, 1),
                                                          with_depth(c.padding, 0), with_depth(c.dilation, 1));
                CHECK(ag::max_pool_indices(x2, g2).values() == ag::max_pool_indices(x3, g3).values());
                const auto a = ag::max_pool(ag::constant(x2), g2).value().values(),
                           b = ag::max_pool(ag::constant(x3), g3).value().values();
                REQUIRE(a.size() == b.size());
                for (std::size_t i = 0; i < a.size(); ++i) CHECK((a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))));
            }
    }
}

TEST_CASE("BatchNorm uses batch statistics in training and running statistics in eval", "[nn][layers][batchnorm]") {
    // one channel, values 1, 2, 3, 6: mean 3, biased var 3.5, unbiased 14/3
    nn::BatchNorm bn(1, 1e-5, 0.1, DType::f64);
    CHECK(bn.state_dict().keys() == std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
    const ag::Variable x = ag::constant(Tensor::from({4, 1}, {1, 2, 3, 6}, DType::f64));
    const auto y = vals(bn(x));
    const double s = std::sqrt(3.5 + 1e-5);
    CHECK(y[0] == Approx(-2 / s));
    CHECK(y[3] == Approx(3 / s));
    CHECK(bn.running_mean().values()[0] == Approx(0.3));
    CHECK(bn.running_var().values()[0] == Approx(0.9 + 0.1 * 14.0 / 3));
    CHECK(bn.num_batches_tracked() == 1);
    // eval: (x − 0.3)/√(rv + eps), and the statistics stay
    bn.eval();
    const double rv = 0.9 + 0.1 * 14.0 / 3;
    const auto e = vals(bn(x));
    CHECK(e[0] == Approx((1 - 0.3) / std::sqrt(rv + 1e-5)));
    CHECK(e[3] == Approx((6 - 0.3) / std::sqrt(rv + 1e-5)));
    CHECK(bn.running_mean().values()[0] == Approx(0.3));
    CHECK(bn.num_batches_tracked() == 1);
    // one sample per channel cannot train; eval takes it
    CHECK(bn(ag::constant(Tensor::from({1, 1}, {2}, DType::f64))).value().values()[0] == Approx((2 - 0.3) / std::sqrt(rv + 1e-5)));
    bn.train();
    CHECK_THROWS_WITH(bn(ag::constant(Tensor::from({1, 1}, {2}, DType::f64))), Catch::Contains("more than one value per channel"));
    CHECK_THROWS_WITH(bn(ag::constant(Tensor::zeros({4, 2}, DType::f64))), Catch::Contains("BatchNorm: input [4, 2]"));
    // 2-D input: per-channel statistics over N, H, W; the result is normalised per channel
    manual_seed(3);
    nn::BatchNorm bn2(3);
    Generator gen(1);
    std::vector<double> v(2 * 3 * 4 * 4);
    gen.fill_normal(v, 5, 2);
    const auto z = vals(bn2(ag::constant(Tensor::from({2, 3, 4, 4}, v, DType::f32))));
    for (int c = 0; c < 3; ++c) {
        double m = 0, q = 0;
        for (int n = 0; n < 2; ++n)
            for (int i = 0; i < 16; ++i) {
                const double w = z[static_cast<std::size_t>((n * 3 + c) * 16 + i)];
                m += w / 32;
                q += w * w / 32;
            }
        CHECK(m == Approx(0).margin(1e-5));
        CHECK(q == Approx(1).margin(1e-3));
    }
    // Module::to converts the running statistics; the counter stays i64
    bn2.to(DType::f64);
    CHECK(bn2.running_var().dtype() == DType::f64);
    CHECK(bn2.state_dict().at("num_batches_tracked").dtype() == DType::i64);
}

TEST_CASE("Dropout zeroes a fraction p in training, keeps the mean, and is the identity in eval", "[nn][layers][dropout]") {
    manual_seed(11);
    const std::int64_t n = 100000;
    const ag::Variable x = ag::param(Tensor::full({n}, 2.0, DType::f64));
    nn::Dropout drop(0.3);
    const ag::Variable y = drop(x);
    const auto v = vals(y);
    std::int64_t zeros = 0, others = 0;
    double sum = 0;
    for (double e : v) {
        zeros += e == 0;
        others += e != 0 && std::fabs(e - 2 / 0.7) > 1e-12;
        sum += e;
    }
    CHECK(others == 0);  // every kept element is scaled by 1/(1 − p)
    // binomial: sd of the zero fraction √(0.3·0.7/n) ≈ 0.00145, of the mean ≈ 0.0044·2
    CHECK(static_cast<double>(zeros) / n == Approx(0.3).margin(0.006));
    CHECK(sum / n == Approx(2).margin(0.02));
    // the gradient is the same mask
    ag::sum(y).backward();
    const auto g = x.grad().values();
    for (std::size_t i = 0; i < g.size(); i += 997) CHECK(g[i] == Approx(v[i] / 2));
    // reproducible from the seed, different draws otherwise
    manual_seed(11);
    CHECK(vals(drop(x)) == v);
    CHECK(vals(drop(x)) != v);
    drop.eval();
    CHECK(drop(x).same(x));
    CHECK(nn::Dropout(0)(x).same(x));
    const auto all = vals(nn::Dropout(1)(x));
    CHECK(std::count(all.begin(), all.end(), 0.0) == n);
    CHECK_THROWS_WITH(nn::Dropout(1.5), Catch::Contains("must be in [0, 1]"));
    // eval propagates through a Sequential
    nn::Sequential net{nn::Linear(4, 4, true, DType::f64), nn::Dropout(0.9)};
    net.eval();
    const ag::Variable in = ag::constant(rnd({2, 4}, 5));
    CHECK(vals(net(in)) == vals(net(in)));
}

TEST_CASE("StepLR and CosineLR give PyTorch's learning-rate sequences", "[nn][schedule]") {
    ag::Variable w = ag::param(Tensor::zeros({2}, DType::f64));
    nn::SGD sgd({w}, 0.1);
    nn::StepLR step(sgd, 3, 0.5);
    std::vector<double> lrs{sgd.lr()};
    for (int e = 0; e < 7; ++e) {
        step.step();
        lrs.push_back(sgd.lr());
    }
    const std::vector<double> want{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025};
    for (std::size_t i = 0; i < want.size(); ++i) CHECK(lrs[i] == Approx(want[i]).epsilon(1e-14));
    CHECK(step.last_epoch() == 7);

    nn::Adam adam({w}, 1.0);
    nn::CosineLR cos(adam, 4, 0.2);
    // eta_min + (1 − eta_min)(1 + cos(π e/4))/2 for e = 1..6
    const std::vector<double> cwant{0.2 + 0.8 * (1 + std::sqrt(0.5)) / 2, 0.6, 0.2 + 0.8 * (1 - std::sqrt(0.5)) / 2, 0.2,
                                    0.2 + 0.8 * (1 - std::sqrt(0.5)) / 2, 0.6};
    for (double c : cwant) {
        cos.step();
        CHECK(adam.lr() == Approx(c).epsilon(1e-12));
        CHECK(cos.last_lr() == adam.lr());
    }
    // the schedule's rate is the one the optimizer uses: one SGD step with lr 0.025
    w.zero_grad();
    ag::sum(ag::mul(w, ag::constant(Tensor::from({2}, {1, -2}, DType::f64)))).backward();
    sgd.step();
    CHECK(w.value().values() == std::vector<double>{-0.025, 0.05});
    CHECK_THROWS_WITH(nn::StepLR(sgd, 0), Catch::Contains("step_size"));
    nn::CosineLR to_zero(sgd, 2);
    to_zero.step();
    to_zero.step();
    CHECK(sgd.lr() == Approx(0).margin(1e-18));
}

TEST_CASE("clip_grad_norm scales every gradient by max_norm/total and returns the total", "[nn][schedule]") {
    // gradients (3, 0) and (0, 4): the joint norm is 5
    ag::Variable a = ag::param(Tensor::zeros({2}, DType::f64)), b = ag::param(Tensor::zeros({2}, DType::f64));
    const ag::Variable unused = ag::param(Tensor::zeros({3}, DType::f64));
    auto run = [&] {
        a.zero_grad();
        b.zero_grad();
        ag::sum(ag::add(ag::mul(a, ag::constant(Tensor::from({2}, {3, 0}, DType::f64))),
                        ag::mul(b, ag::constant(Tensor::from({2}, {0, 4}, DType::f64)))))
            .backward();
    };
    run();
    CHECK(nn::clip_grad_norm({a, b, unused}, 10) == Approx(5));
    CHECK(a.grad().values() == std::vector<double>{3, 0});  // below the limit: unchanged
    CHECK(nn::clip_grad_norm({a, b, unused}, 1) == Approx(5));
    CHECK(a.grad().values()[0] == Approx(0.6).epsilon(1e-6));
    CHECK(b.grad().values()[1] == Approx(0.8).epsilon(1e-6));
    CHECK(nn::clip_grad_norm({a, b}, 1) == Approx(1).epsilon(1e-6));
    // gradients that share storage (y = a + b gives both the same tensor) are each scaled once
    a.zero_grad();
    b.zero_grad();
    ag::sum(ag::mul(ag::add(a, b), ag::constant(Tensor::from({2}, {3, 4}, DType::f64)))).backward();
    CHECK(nn::clip_grad_norm({a, b}, 1) == Approx(std::sqrt(50.0)));
    CHECK(a.grad().values()[0] == Approx(3 / std::sqrt(50.0)).epsilon(1e-6));
    CHECK(b.grad().values()[0] == Approx(3 / std::sqrt(50.0)).epsilon(1e-6));
}

TEST_CASE("anomaly mode names the first op that produced NaN or Inf", "[autograd][anomaly]") {
    const ag::Variable x = ag::param(Tensor::from({3}, {1, -1, 2}, DType::f64), "x");
    // off: log(−1) is a silent NaN
    CHECK(std::isnan(vals(ag::log(x))[1]));
    {
        ag::AnomalyModeGuard anomaly;
        CHECK(ag::anomaly_mode_enabled());
        CHECK_THROWS_WITH(ag::exp(ag::log(x)), Catch::Contains("'log' produced NaN at [1]") &&
                                                   Catch::Contains("0 'x' f64 [3]") && !Catch::Contains("already"));
        // also without a gradient to record
        CHECK_THROWS_WITH(ag::log(ag::constant(x.value())), Catch::Contains("'log'"));
        // the op that receives a NaN is told its input already held it
        const ag::Variable bad = ag::constant(Tensor::from({2}, {std::nan(""), 1}, DType::f64));
        CHECK_THROWS_WITH(ag::exp(bad), Catch::Contains("'exp'") && Catch::Contains("already holds 1 NaN/Inf"));
        // a backward that overflows: d/dx sqrt at 0 is infinite
        const ag::Variable z = ag::param(Tensor::from({2}, {0, 1}, DType::f64));
        const ag::Variable r = ag::sum(ag::sqrt(z));
        CHECK_THROWS_WITH(r.backward(), Catch::Contains("in the backward of 'sqrt'") && Catch::Contains("Inf"));
        // finite values pass
        CHECK(vals(ag::exp(x))[0] == Approx(std::exp(1.0)));
    }
    CHECK_FALSE(ag::anomaly_mode_enabled());
    ag::set_detect_anomaly(true);
    CHECK_THROWS(ag::log(x));
    ag::set_detect_anomaly(false);
    CHECK_NOTHROW(ag::log(x));
}

TEST_CASE("Conv and ConvTranspose with_relu: the layer then a ReLU, values and gradients", "[nn][layers]") {
    const nn::ConvOptions opt = nn::ConvOptions{3, 3}.stride(2).padding(1);
    nn::Conv conv(2, 3, opt);
    nn::ConvTranspose convt(3, 2, nn::ConvOptions{opt}.output_padding(1));
    const Tensor x = rnd({2, 2, 7, 6}, 41, -2, 2).to(DType::f32);
    auto check_layer = [&](auto& layer, const Tensor& input) {
        auto fused = layer;  // a copy shares the parameters
        fused.with_relu();
        CHECK(fused.has_relu());
        CHECK_FALSE(layer.has_relu());
        CHECK(fused.repr() == layer.repr().substr(0, layer.repr().size() - 1) + ", relu)");
        const ag::Variable in = ag::param(input);
        const ag::Variable yf = fused(in), ya = nn::ReLU()(layer(in));
        CHECK(yf.value().values() == ya.value().values());
        const std::vector<double> v = yf.value().values();
        CHECK(std::count(v.begin(), v.end(), 0.0) > 0);  // the ReLU cuts some
        const ag::Variable r = ag::constant(rnd(yf.value().shape(), 42).to(DType::f32));
        const std::vector<ag::Variable> wrt{in, layer.weight, layer.bias};
        const auto gf = ag::grad({ag::sum(ag::mul(yf, r))}, wrt), ga = ag::grad({ag::sum(ag::mul(ya, r))}, wrt);
        for (std::size_t i = 0; i < wrt.size(); ++i) CHECK(gf[i].value().values() == ga[i].value().values());
        return yf.value();
    };
    const Tensor h = check_layer(conv, x);
    check_layer(convt, h);
    // Second derivatives through the fused ReLU (f64 finite differences).
    const ConvGeometry g = conv.geometry(x.shape());
    const ag::Function f = [g](const std::vector<ag::Variable>& v) {
        const ag::Variable y = ag::conv(v[0], v[1], g, v[2], true);
        return ag::mul(y, y);
    };
    const ag::CheckReport g2 = ag::gradgradcheck(f, {rnd(x.shape(), 43), rnd(g.weight_shape(), 44), rnd({3}, 45)});
    INFO(g2.table());
    CHECK(g2.ok);
}

using testing::same_bits;

TEST_CASE("linear: x·Wᵀ + bias and a fused ReLU, bit for bit the ops apart, forward and backward", "[nn][layers]") {
    // By hand: x = [[1, 2], [-1, 0]], W = [[1, 0], [0, 1], [1, 1]] (3 × 2), b = [0.5, -3, 0]:
    // x·Wᵀ = [[1, 2, 3], [-1, 0, -1]], + b = [[1.5, -1, 3], [-0.5, -3, -1]], relu: [[1.5, 0, 3], [0, 0, 0]].
    const Tensor x = Tensor::from({2, 2}, {1, 2, -1, 0}, DType::f64), W = Tensor::from({3, 2}, {1, 0, 0, 1, 1, 1}, DType::f64);
    const Tensor b = Tensor::from({3}, {0.5, -3, 0}, DType::f64);
    CHECK(linear(x, W, b).values() == std::vector<double>{1.5, -1, 3, -0.5, -3, -1});
    CHECK(linear(x, W, b, true).values() == std::vector<double>{1.5, 0, 3, 0, 0, 0});
    CHECK(linear(x, W).values() == std::vector<double>{1, 2, 3, -1, 0, -1});
    CHECK(linear(x, W, {}, true).values() == std::vector<double>{1, 2, 3, 0, 0, 0});
    // Against the ops apart, with a NaN in x, every float dtype, with and without bias / ReLU.
    for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::f16})
        for (const bool with_bias : {true, false})
            for (const bool relu : {true, false}) {
                INFO(dtype_name(dt) << (with_bias ? " bias" : "") << (relu ? " relu" : ""));
                Tensor xv = rnd({37, 29}, 51, -2, 2).to(dt);
                if (dt == DType::f64) xv.data<double>()[5] = std::numeric_limits<double>::quiet_NaN();
                const ag::Variable xi = ag::param(xv), w = ag::param(rnd({19, 29}, 52).to(dt));
                const ag::Variable bi = with_bias ? ag::param(rnd({19}, 53).to(dt)) : ag::Variable();
                const ag::Variable fused = ag::linear(xi, w, bi, relu);
                ag::Variable apart = ag::matmul(xi, ag::transpose(w));
                if (with_bias) apart = ag::add(apart, bi);
                if (relu) apart = ag::relu(apart);
                REQUIRE(same_bits(fused.value(), apart.value()));
                const ag::Variable r = ag::constant(rnd({37, 19}, 54).to(dt));
                std::vector<ag::Variable> wrt{xi, w};
                if (with_bias) wrt.push_back(bi);
                const auto gf = ag::grad({ag::sum(ag::mul(fused, r))}, wrt), ga = ag::grad({ag::sum(ag::mul(apart, r))}, wrt);
                for (std::size_t i = 0; i < wrt.size(); ++i) {
                    INFO("gradient " << i);
                    CHECK(same_bits(gf[i].value(), ga[i].value()));
                }
            }
    // f64 finite differences, first and second order, through the ReLU.
    const ag::Function f = [](const std::vector<ag::Variable>& v) {
        const ag::Variable y = ag::linear(v[0], v[1], v[2], true);
        return ag::mul(y, y);
    };
    const std::vector<Tensor> in{rnd({5, 4}, 55, -2, 2), rnd({3, 4}, 56), rnd({3}, 57)};
    const ag::CheckReport g1 = ag::gradcheck(f, in), g2 = ag::gradgradcheck(f, in);
    INFO(g1.table() << g2.table());
    CHECK(g1.ok);
    CHECK(g2.ok);
    // Errors name the operand.
    CHECK_THROWS_WITH(linear(x, W.transpose(0, 1)), Catch::Contains("linear: input has shape [2, 2], the weight [2, 3] needs [N, 3]"));
    CHECK_THROWS_WITH(linear(x, Tensor::zeros({3, 2, 1}, DType::f64)), Catch::Contains("linear: weight has shape [3, 2, 1]"));
    CHECK_THROWS_WITH(linear(x, W, Tensor::zeros({2}, DType::f64)), Catch::Contains("linear: bias has shape [2], the weight [3, 2] needs [3]"));
    CHECK_THROWS_WITH(linear(x, W.to(DType::f32)), Catch::Contains("linear: input and weight must share one float dtype, got f64 and f32"));
    CHECK_THROWS_WITH(linear(x, W, b.to(DType::f32)), Catch::Contains("linear: bias has dtype f32, the input f64"));
    // The layer: Linear(in, out).with_relu() is Linear then ReLU.
    nn::Linear plain(29, 19);
    nn::Linear fused = plain;  // a copy shares the parameters
    fused.with_relu();
    CHECK(fused.has_relu());
    CHECK(fused.repr() == "Linear(29, 19, relu)");
    const ag::Variable in2 = ag::constant(rnd({7, 29}, 58).to(DType::f32));
    CHECK(same_bits(fused(in2).value(), nn::ReLU()(plain(in2)).value()));
}
