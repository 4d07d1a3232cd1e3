// nn/: layers against the direct-loop reference and hand-computed values, parameter
// gradients against central differences, optimizer steps by hand, checkpoints.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <random>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/nn/checkpoint.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/optim.hpp"
#include "tapegrad/ops/conv_reference.hpp"

using namespace tg;

namespace {

Tensor randn(const Shape& s, std::uint32_t seed, DType dt = DType::f64) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> n;
    std::vector<double> v(static_cast<std::size_t>(shape_numel(s)));
    for (double& e : v) e = n(rng);
    return Tensor::from(s, v, dt);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    const auto x = a.values(), y = b.values();
    double m = 0;
    for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
    return m;
}

// Sum of every output element times a fixed random weight: a scalar whose gradient
// exercises every output.
ag::Variable probe(const ag::Variable& y, std::uint32_t seed) {
    return ag::sum(ag::mul(y, ag::constant(randn(y.shape(), seed))));
}

}  // namespace

TEST_CASE("Linear computes x·W + b", "[nn]") {
    nn::Linear lin(2, 3, true, DType::f64);
    lin.weight.assign(Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6}, DType::f64));
    lin.bias.assign(Tensor::from({3}, {0.5, -1, 0}, DType::f64));
    const Tensor y = lin(ag::constant(Tensor::from({1, 2}, {1, -1}, DType::f64))).value();
    CHECK(y.values() == std::vector<double>{1 - 4 + 0.5, 2 - 5 - 1, 3 - 6});
    CHECK_THROWS_AS(lin(ag::constant(Tensor::zeros({1, 3}, DType::f64))), Error);
}

TEST_CASE("Conv and ConvTranspose layers match the direct-loop reference", "[nn]") {
    nn::init_rng().seed(3);
    nn::ConvOptions o{.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2, .dtype = DType::f64};
    nn::Conv conv(4, 6, o);
    const Tensor x = randn({2, 4, 7, 6}, 1);
    const ConvGeometry g = conv.geometry(x.shape());
    CHECK(g.out_size == Shape{4, 4});  // ⌊(7+2−3)/2⌋+1, ⌊(6−3)/1⌋+1
    Tensor want = reference::conv_forward(x, conv.weight.value().reshape(g.weight_shape()), g);
    const std::vector<double> b = conv.bias.value().values();
    std::vector<double> wv = want.values();
    for (std::size_t i = 0; i < wv.size(); ++i) wv[i] += b[(i / 16) % 6];
    CHECK(max_abs_diff(conv(ag::constant(x)).value(), Tensor::from(want.shape(), wv, DType::f64)) < 1e-12);

    nn::ConvOptions u{.kernel = {3}, .stride = {2}, .padding = {1}, .output_padding = {1}, .bias = false, .dtype = DType::f64};
    nn::ConvTranspose up(3, 2, u);
    const Tensor z = randn({2, 3, 5}, 2);
    const ConvGeometry gt = up.geometry(z.shape());
    CHECK(gt.in_size == Shape{10});  // 2·(5−1) + 3 − 2 + 1
    CHECK(max_abs_diff(up(ag::constant(z)).value(),
                       reference::conv_transposed(z, up.weight.value().reshape(gt.weight_shape()), gt)) < 1e-12);
    CHECK_THROWS_AS(up(ag::constant(randn({2, 4, 5}, 3))), Error);
}

TEST_CASE("Layer parameter gradients agree with central differences", "[nn]") {
    nn::init_rng().seed(5);
    nn::Sequential model;
    nn::ConvOptions down{.kernel = {3, 3}, .stride = {2}, .padding = {1}, .dtype = DType::f64};
    nn::ConvOptions up{.kernel = {3, 3}, .stride = {2}, .padding = {1}, .output_padding = {1}, .dtype = DType::f64};
    model.add(std::make_shared<nn::Conv>(1, 2, down))
        .add(std::make_shared<nn::Tanh>())
        .add(std::make_shared<nn::ConvTranspose>(2, 1, up));
    const ag::Variable x = ag::constant(randn({2, 1, 6, 6}, 7));
    auto loss = [&] { return probe(model(x), 11); };
    model.zero_grad();
    loss().backward();
    const double h = 1e-6;
    for (auto& [name, p] : model.named_parameters()) {
        const Tensor analytic = p.grad();
        REQUIRE(analytic.defined());
        const std::vector<double> a = analytic.values();
        std::vector<double> v = p.value().values();
        for (std::size_t i = 0; i < v.size(); ++i) {
            const double keep = v[i];
            v[i] = keep + h;
            p.assign(Tensor::from(p.shape(), v, DType::f64));
            const double up_ = loss().item();
            v[i] = keep - h;
            p.assign(Tensor::from(p.shape(), v, DType::f64));
            const double down_ = loss().item();
            v[i] = keep;
            p.assign(Tensor::from(p.shape(), v, DType::f64));
            INFO(name << "[" << i << "]");
            CHECK(a[i] == Approx((up_ - down_) / (2 * h)).epsilon(1e-6).margin(1e-8));
        }
    }
}

TEST_CASE("SGD and Adam steps match hand computation", "[nn]") {
    ag::Variable p = ag::param(Tensor::from({2}, {1.0, -2.0}, DType::f64));
    auto set_grad = [&](std::vector<double> g) {
        p.zero_grad();
        ag::sum(ag::mul(p, ag::constant(Tensor::from({2}, g, DType::f64)))).backward();
    };
    nn::SGD sgd({p}, 0.1, 0.9);
    set_grad({1, 2});
    sgd.step();  // v = g; p -= 0.1·v
    CHECK(p.value().values()[0] == Approx(0.9));
    CHECK(p.value().values()[1] == Approx(-2.2));
    set_grad({1, 2});
    sgd.step();  // v = 0.9·g + g = 1.9·g
    CHECK(p.value().values()[0] == Approx(0.9 - 0.19));
    CHECK(p.value().values()[1] == Approx(-2.2 - 0.38));

    ag::Variable q = ag::param(Tensor::from({2}, {1.0, -2.0}, DType::f64));
    nn::Adam adam({q}, 0.01);
    q.zero_grad();
    ag::sum(ag::mul(q, ag::constant(Tensor::from({2}, {0.5, -4.0}, DType::f64)))).backward();
    adam.step();  // first step: m̂ = g, v̂ = g², so p -= lr·g/(|g| + eps)
    CHECK(q.value().values()[0] == Approx(1.0 - 0.01 * 0.5 / (0.5 + 1e-8)));
    CHECK(q.value().values()[1] == Approx(-2.0 + 0.01 * 4.0 / (4.0 + 1e-8)));
    CHECK_THROWS_AS(nn::Adam({q}, -1.0), Error);
    CHECK_THROWS_AS(nn::SGD({ag::constant(Tensor::zeros({1}, DType::f64))}, 0.1), Error);
}

TEST_CASE("Checkpoints round-trip and refuse mismatched shapes", "[nn]") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "tapegrad_test_ckpt";
    fs::remove_all(dir);
    nn::init_rng().seed(9);
    nn::Linear a(3, 2), b(3, 2), c(2, 2);
    nn::save_checkpoint(a, dir.string());
    CHECK(fs::exists(dir / "weight.npy"));
    nn::load_checkpoint(b, dir.string());
    CHECK(max_abs_diff(a.weight.value(), b.weight.value()) == 0);
    CHECK(max_abs_diff(a.bias.value(), b.bias.value()) == 0);
    const Tensor before = c.weight.value().clone();
    CHECK_THROWS_AS(nn::load_checkpoint(c, dir.string()), Error);
    CHECK(max_abs_diff(c.weight.value(), before) == 0);
    CHECK_THROWS_AS(nn::load_checkpoint(c, (dir / "missing").string()), Error);
    fs::remove_all(dir);
}

TEST_CASE("A small autoencoder learns a fixed batch", "[nn]") {
    nn::init_rng().seed(1);
    nn::Sequential model;
    model.add(std::make_shared<nn::Conv>(1, 4, nn::ConvOptions{.kernel = {3, 3}, .stride = {2}, .padding = {1}}))
        .add(std::make_shared<nn::ReLU>())
        .add(std::make_shared<nn::ConvTranspose>(4, 1, nn::ConvOptions{.kernel = {3, 3}, .stride = {2}, .padding = {1}, .output_padding = {1}}));
    Tensor img = randn({4, 1, 8, 8}, 3, DType::f32);
    const ag::Variable x = ag::constant(ag::sigmoid(ag::constant(img)).value());
    nn::Adam opt(model.parameters(), 1e-2);
    double first = 0, last = 0;
    for (int step = 0; step < 150; ++step) {
        const ag::Variable loss = ag::mse_loss(ag::sigmoid(model(x)), x);
        opt.zero_grad();
        loss.backward();
        opt.step();
        (step == 0 ? first : last) = loss.item();
    }
    CHECK(last < 0.5 * first);
}
