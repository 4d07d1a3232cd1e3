// nn/: layers against the direct-loop reference and hand-computed values, parameter
// gradients against central differences, optimizer steps by hand, checkpoints.
#include <catch2/catch.hpp>

#include "tensor_helpers.hpp"
#include "isas.hpp"

#include <cmath>
#include <filesystem>
#include <random>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/nn/checkpoint.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/optim.hpp"
#include "tapegrad/ops/conv_reference.hpp"

using namespace tg;
using testing::max_abs_diff;

namespace {

Tensor randn(const Shape& s, std::uint32_t seed, DType dt = DType::f64) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> n;
    std::vector<double> v(static_cast<std::size_t>(shape_numel(s)));
    for (double& e : v) e = n(rng);
    return Tensor::from(s, v, dt);
}

// Sum of every output element times a fixed random weight: a scalar whose gradient
// exercises every output.
ag::Variable probe(const ag::Variable& y, std::uint32_t seed) {
    return ag::sum(ag::mul(y, ag::constant(randn(y.shape(), seed))));
}

}  // namespace

TEST_CASE("Linear is laid out as PyTorch: weight [out, in], y = x·Wᵀ + b", "[nn]") {
    manual_seed(2);
    nn::Linear fresh(5, 3);
    CHECK(fresh.weight.shape() == Shape{3, 5});
    CHECK(fresh.bias.shape() == Shape{3});
    for (double w : fresh.weight.value().values()) CHECK(std::fabs(w) <= 1 / std::sqrt(5.0));  // U(−1/√in, 1/√in)

    nn::Linear lin(2, 3, true, DType::f64);
    lin.weight.assign(Tensor::from({3, 2}, {1, 4, 2, 5, 3, 6}, DType::f64));  // rows: output features
    lin.bias.assign(Tensor::from({3}, {0.5, -1, 0}, DType::f64));
    const ag::Variable x = ag::constant(Tensor::from({2, 2}, {1, -1, 2, 0.5}, DType::f64));
    const Tensor y = lin(x).value();
    CHECK(y.shape() == Shape{2, 3});
    CHECK(y.values() == std::vector<double>{1 - 4 + 0.5, 2 - 5 - 1, 3 - 6,  //
                                            2 + 2 + 0.5, 4 + 2.5 - 1, 6 + 3});
    // dL/dW for L = Σ y: row o of the gradient is Σ_n x[n], the same for every output
    lin.zero_grad();
    ag::sum(lin(x)).backward();
    CHECK(lin.weight.grad().values() == std::vector<double>{3, -0.5, 3, -0.5, 3, -0.5});
    CHECK(lin.bias.grad().values() == std::vector<double>{2, 2, 2});
    CHECK_THROWS_AS(lin(ag::constant(Tensor::zeros({1, 3}, DType::f64))), Error);
    nn::Linear no_bias(2, 3, false, DType::f64);
    CHECK_FALSE(no_bias.bias.defined());
    CHECK(no_bias.named_parameters().size() == 1);
}

TEST_CASE("Conv and ConvTranspose layers match the direct-loop reference", "[nn]") {
    manual_seed(3);
    const auto o = nn::ConvOptions{3, 2}.stride({2, 1}).padding({1, 0}).dilation({1, 2}).groups(2).dtype(DType::f64);
    nn::Conv conv(4, 6, o);
    const Tensor x = randn({2, 4, 7, 6}, 1);
    const ConvGeometry g = conv.geometry(x.shape());
    CHECK(g.out_size == Shape{4, 4});  // ⌊(7+2−3)/2⌋+1, ⌊(6−3)/1⌋+1
    Tensor want = reference::conv_forward(x, conv.weight.value().reshape(g.weight_shape()), g);
    const std::vector<double> b = conv.bias.value().values();
    std::vector<double> wv = want.values();
    for (std::size_t i = 0; i < wv.size(); ++i) wv[i] += b[(i / 16) % 6];
    CHECK(max_abs_diff(conv(ag::constant(x)).value(), Tensor::from(want.shape(), wv, DType::f64)) < 1e-12);

    const auto u = nn::ConvOptions{3}.stride(2).padding(1).output_padding(1).bias(false).dtype(DType::f64);
    nn::ConvTranspose up(3, 2, u);
    const Tensor z = randn({2, 3, 5}, 2);
    const ConvGeometry gt = up.geometry(z.shape());
    CHECK(gt.in_size == Shape{10});  // 2·(5−1) + 3 − 2 + 1
    CHECK(max_abs_diff(up(ag::constant(z)).value(),
                       reference::conv_transposed(z, up.weight.value().reshape(gt.weight_shape()), gt)) < 1e-12);
    CHECK_THROWS_AS(up(ag::constant(randn({2, 4, 5}, 3))), Error);
}

TEST_CASE("Layer parameter gradients agree with central differences", "[nn]") {
    manual_seed(5);
    nn::Sequential model{nn::Conv(1, 2, nn::ConvOptions{3, 3}.stride(2).padding(1)), nn::Tanh(),
                         nn::ConvTranspose(2, 1, nn::ConvOptions{3, 3}.stride(2).padding(1).output_padding(1))};
    model.to(DType::f64);
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

TEST_CASE("Adam and AdamW steps are the same bit for bit at every instruction set", "[nn][simd]") {
    // 1000 f32 and f64 elements (whole vectors and a tail), five steps with weight decay;
    // the vector kernel must round as the scalar loop does (no fused multiply-adds).
    for (DType dt : {DType::f32, DType::f64})
        for (bool decoupled : {false, true}) {
            std::vector<std::vector<double>> results;
            testing::IsaGuard guard;
            for (simd::Isa isa : testing::tested_isas()) {
                simd::force(isa);
                ag::Variable p = ag::param(randn({1000}, 11, dt));
                const Tensor c = randn({1000}, 12, dt);
                std::unique_ptr<nn::Optimizer> opt;
                if (decoupled) opt = std::make_unique<nn::AdamW>(std::vector<ag::Variable>{p}, 0.01, 0.9, 0.999, 1e-8, 0.1);
                else opt = std::make_unique<nn::Adam>(std::vector<ag::Variable>{p}, 0.01, 0.9, 0.999, 1e-8, 0.1);
                for (int t = 0; t < 5; ++t) {
                    opt->zero_grad();
                    ag::sum(ag::mul(ag::mul(p, p), ag::constant(c))).backward();  // g = 2·c·p
                    opt->step();
                }
                results.push_back(p.value().values());
            }
            INFO(dtype_name(dt) << (decoupled ? " AdamW" : " Adam"));
            for (std::size_t i = 1; i < results.size(); ++i) CHECK(results[i] == results[0]);
        }
}

namespace {

// Three steps of an optimizer on p (a loss whose gradient is g_t = c_t ⊙ p + d_t, so it
// depends on the parameter), against `reference`, the update written out in doubles.
struct Trajectory {
    std::vector<double> p0{0.5, -1.25, 2.0, 0.0};
    std::vector<std::vector<double>> c{{1, 2, -1, 0.5}, {0.25, -3, 1, 2}, {-1, 0.5, 0.75, -2}};
    std::vector<std::vector<double>> d{{0.1, -0.2, 0.3, 1}, {-0.5, 0.25, 0, 0.125}, {1, -1, 0.5, -0.25}};

    // Runs the optimizer made by `make` on a parameter of `dtype`, returns p after each step.
    template <class Make>
    std::vector<std::vector<double>> run(DType dtype, Make make) const {
        ag::Variable p = ag::param(Tensor::from({4}, p0, dtype));
        auto opt = make(std::vector<ag::Variable>{p});
        std::vector<std::vector<double>> out;
        for (std::size_t t = 0; t < 3; ++t) {
            // L = Σ (c/2·p² + d·p): dL/dp = c·p + d
            const ag::Variable half_c = ag::constant(Tensor::from({4}, c[t], dtype));
            const ag::Variable loss = ag::sum(ag::add(ag::scale(ag::mul(half_c, ag::mul(p, p)), 0.5),
                                                      ag::mul(ag::constant(Tensor::from({4}, d[t], dtype)), p)));
            opt.zero_grad();
            loss.backward();
            opt.step();
            out.push_back(p.value().values());
        }
        return out;
    }
    std::vector<double> grad(std::size_t t, const std::vector<double>& p) const {
        std::vector<double> g(p.size());
        for (std::size_t k = 0; k < p.size(); ++k) g[k] = c[t][k] * p[k] + d[t][k];
        return g;
    }
};

}  // namespace

TEST_CASE("SGD with momentum and weight decay matches a double reference over 3 steps", "[nn]") {
    const Trajectory tr;
    const double lr = 0.1, mu = 0.9, wd = 0.01;
    std::vector<double> p = tr.p0, v(4, 0.0);
    std::vector<std::vector<double>> want;
    for (std::size_t t = 0; t < 3; ++t) {
        const std::vector<double> g = tr.grad(t, p);
        for (std::size_t k = 0; k < 4; ++k) {
            const double dk = g[k] + wd * p[k];
            v[k] = mu * v[k] + dk;
            p[k] -= lr * v[k];
        }
        want.push_back(p);
    }
    auto make = [&](std::vector<ag::Variable> ps) { return nn::SGD(std::move(ps), lr, mu, wd); };
    const auto got = tr.run(DType::f64, make);
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t k = 0; k < 4; ++k) {
            INFO("step " << t << " element " << k);
            CHECK(got[t][k] == Approx(want[t][k]).epsilon(1e-15).margin(1e-15));
        }
    const auto got32 = tr.run(DType::f32, make);  // f32 state, f32 arithmetic
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t k = 0; k < 4; ++k) CHECK(got32[t][k] == Approx(want[t][k]).epsilon(1e-6).margin(1e-6));
    const auto got16 = tr.run(DType::bf16, make);  // f32 state, rounded to bf16 once per step
    for (std::size_t k = 0; k < 4; ++k) CHECK(got16[2][k] == Approx(want[2][k]).epsilon(2e-2).margin(2e-2));

    // plain SGD (no momentum) keeps no state
    ag::Variable q = ag::param(Tensor::from({2}, {1.0, 2.0}, DType::f64));
    nn::SGD plain({q}, 0.5, 0, 0.1);
    ag::sum(q).backward();
    plain.step();  // p -= 0.5·(1 + 0.1·p)
    CHECK(q.value().values() == std::vector<double>{1 - 0.5 * 1.1, 2 - 0.5 * 1.2});
    CHECK_FALSE(plain.velocity(0).defined());
}

TEST_CASE("Adam with weight decay matches a double reference over 3 steps", "[nn]") {
    const Trajectory tr;
    const double lr = 0.05, b1 = 0.8, b2 = 0.95, eps = 1e-6, wd = 0.02;
    std::vector<double> p = tr.p0, m(4, 0.0), v(4, 0.0);
    std::vector<std::vector<double>> want;
    for (std::size_t t = 0; t < 3; ++t) {
        const std::vector<double> g = tr.grad(t, p);
        const double c1 = 1 - std::pow(b1, double(t + 1)), c2 = 1 - std::pow(b2, double(t + 1));
        for (std::size_t k = 0; k < 4; ++k) {
            const double dk = g[k] + wd * p[k];
            m[k] = b1 * m[k] + (1 - b1) * dk;
            v[k] = b2 * v[k] + (1 - b2) * dk * dk;
            p[k] -= lr * (m[k] / c1) / (std::sqrt(v[k] / c2) + eps);
        }
        want.push_back(p);
    }
    auto make = [&](std::vector<ag::Variable> ps) { return nn::Adam(std::move(ps), lr, b1, b2, eps, wd); };
    const auto got = tr.run(DType::f64, make);
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t k = 0; k < 4; ++k) {
            INFO("step " << t << " element " << k);
            CHECK(got[t][k] == Approx(want[t][k]).epsilon(1e-14).margin(1e-14));
        }
    const auto got32 = tr.run(DType::f32, make);
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t k = 0; k < 4; ++k) CHECK(got32[t][k] == Approx(want[t][k]).epsilon(1e-5).margin(1e-5));
    const auto got16 = tr.run(DType::f16, make);
    for (std::size_t k = 0; k < 4; ++k) CHECK(got16[2][k] == Approx(want[2][k]).epsilon(5e-3).margin(5e-3));
}

TEST_CASE("Optimizers skip parameters without a gradient, keep state in the parameter's dtype, bump versions",
          "[nn]") {
    ag::Variable used = ag::param(Tensor::from({2}, {1.0, 2.0}, DType::f32));
    ag::Variable idle = ag::param(Tensor::from({2}, {3.0, 4.0}, DType::f32));
    ag::Variable half = ag::param(Tensor::from({2}, {1.0, 1.0}, DType::f16));
    nn::Adam adam({used, idle, half}, 0.1);
    nn::SGD sgd({used, idle}, 0.1, 0.5);
    ag::sum(used).backward();
    REQUIRE_FALSE(idle.has_grad());
    const void* storage = used.value().storage_id();
    const std::uint64_t v0 = used.value().version();
    adam.step();
    sgd.step();
    CHECK(idle.value().values() == std::vector<double>{3.0, 4.0});  // untouched
    CHECK_FALSE(adam.first_moment(1).defined());
    CHECK_FALSE(sgd.velocity(1).defined());
    CHECK(adam.first_moment(0).dtype() == DType::f32);
    CHECK(sgd.velocity(0).dtype() == DType::f32);
    CHECK(used.value().storage_id() == storage);  // updated in place
    CHECK(used.value().version() == v0 + 2);      // once per step
    CHECK(half.value().values() == std::vector<double>{1.0, 1.0});  // no gradient either

    // f16 parameter: f32 state, the update rounded into the f16 storage
    ag::sum(half).backward();
    adam.step();
    CHECK(adam.first_moment(2).dtype() == DType::f32);
    CHECK(half.value().dtype() == DType::f16);
    // its first update, at the optimizer's second step (the bias correction counts step() calls)
    const double c1 = 1 - 0.9 * 0.9, c2 = 1 - 0.999 * 0.999;
    CHECK(half.value().values()[0] == Approx(1 - 0.1 * (0.1 / c1) / (std::sqrt(0.001 / c2) + 1e-8)).epsilon(1e-3));

    // a graph built before a step is stale after it
    const ag::Variable loss = ag::sum(ag::mul(used, used));
    sgd.step();
    CHECK_THROWS_AS(loss.backward(), Error);
}

namespace {

// A module with a buffer (what BatchNorm's running statistics will be) and a sub-module.
struct WithBuffer : nn::Module {
    std::shared_ptr<nn::Linear> inner;
    WithBuffer() {
        register_parameter("scale", Tensor::from({2}, {1.0, 2.0}, DType::f32));
        register_buffer("running", Tensor::from({2}, {0.25, 0.5}, DType::f32));
        register_buffer("count", Tensor::from({1}, {3}, DType::i64));
        inner = register_module("inner", nn::Linear(2, 2));
    }
    ag::Variable forward(const ag::Variable& x) override {
        return ag::add((*inner)(x), ag::constant(buffer("running")));
    }
};

}  // namespace

TEST_CASE("state_dict lists parameters and buffers in order and round-trips", "[nn]") {
    manual_seed(4);
    WithBuffer a, b;
    const nn::StateDict sd = a.state_dict();
    CHECK(sd.keys() == std::vector<std::string>{"scale", "running", "count", "inner.weight", "inner.bias"});
    CHECK(sd.at("inner.weight").storage_id() == a.inner->weight.value().storage_id());  // shared, not copied
    CHECK(a.named_buffers().size() == 2);
    CHECK(a.parameter_count() == 2 + 4 + 2);

    CHECK(max_abs_diff(a.inner->weight.value(), b.inner->weight.value()) > 0);
    const std::uint64_t v0 = b.inner->weight.value().version();
    const nn::LoadResult r = b.load_state_dict(sd.clone());
    CHECK(r.missing.empty());
    CHECK(r.unexpected.empty());
    for (const auto& [name, t] : b.state_dict()) {
        INFO(name);
        CHECK(max_abs_diff(t, sd.at(name)) == 0);
    }
    CHECK(b.inner->weight.value().version() == v0 + 1);  // assigned in place, like an optimizer step
    CHECK_THROWS_AS(sd.at("nope"), Error);

    // Sequential names its layers 0, 1, ...
    nn::Sequential net{nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2)};
    CHECK(net.state_dict().keys() == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
}

TEST_CASE("load_state_dict names missing and unexpected keys and mismatches, and changes nothing", "[nn]") {
    manual_seed(6);
    nn::Sequential net{nn::Linear(3, 4), nn::Tanh(), nn::Linear(4, 2)};
    const nn::StateDict before = net.state_dict().clone();
    auto unchanged = [&] {
        for (const auto& [name, t] : net.state_dict())
            if (max_abs_diff(t, before.at(name)) != 0) return false;
        return true;
    };
    auto message = [&](const nn::StateDict& d, bool strict = true) -> std::string {
        try {
            net.load_state_dict(d, strict);
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    };

    nn::StateDict missing = before.clone();
    missing.erase("2.bias");
    std::string m = message(missing);
    CHECK(m.find("missing keys: 2.bias") != std::string::npos);
    CHECK(unchanged());

    nn::StateDict extra = before.clone();
    extra.insert("3.weight", Tensor::zeros({2, 2}, DType::f32));
    extra.set("0.weight", Tensor::zeros({4, 3}, DType::f32));
    m = message(extra);
    CHECK(m.find("unexpected keys: 3.weight") != std::string::npos);
    CHECK(unchanged());

    nn::StateDict shape = before.clone();
    shape.set("0.weight", Tensor::zeros({3, 4}, DType::f32));  // the old [in, out] layout
    m = message(shape);
    CHECK(m.find("0.weight is [3, 4] f32 in the dictionary, [4, 3] f32 in the module") != std::string::npos);
    CHECK(unchanged());

    nn::StateDict dtype = before.clone();
    dtype.set("2.bias", Tensor::zeros({2}, DType::f64));
    m = message(dtype);
    CHECK(m.find("2.bias is [2] f64") != std::string::npos);
    CHECK_THROWS_AS(net.load_state_dict(dtype, false), Error);  // mismatches fail even when not strict
    CHECK(unchanged());

    // not strict: loads what matches, reports the rest
    nn::StateDict partial;
    partial.insert("0.bias", Tensor::full({4}, 7.0, DType::f32));
    partial.insert("other", Tensor::zeros({1}, DType::f32));
    const nn::LoadResult r = net.load_state_dict(partial, false);
    CHECK(r.missing == std::vector<std::string>{"0.weight", "2.weight", "2.bias"});
    CHECK(r.unexpected == std::vector<std::string>{"other"});
    CHECK(net.state_dict().at("0.bias").values() == std::vector<double>(4, 7.0));
}

TEST_CASE("Module::to converts every parameter and float buffer in place", "[nn]") {
    manual_seed(8);
    WithBuffer m;
    const ag::Variable w = m.inner->weight;  // a handle taken before the conversion
    const std::vector<double> values = w.value().values();
    const ag::Variable x = ag::constant(Tensor::full({1, 2}, 1.0, DType::f32));
    ag::sum(m(x)).backward();
    const ag::Variable stale = ag::sum(m(x));  // a graph recorded before the conversion
    nn::Module& r = m.to(DType::f64);
    CHECK(&r == &m);
    for (const auto& [name, p] : m.named_parameters()) {
        INFO(name);
        CHECK(p.dtype() == DType::f64);
        CHECK_FALSE(p.has_grad());  // gradients of the old dtype are dropped
    }
    CHECK(w.dtype() == DType::f64);  // the same Variable, converted
    CHECK(w.same(m.inner->weight));
    CHECK(w.value().values() == values);  // f32 -> f64 is exact
    CHECK(m.state_dict().at("running").dtype() == DType::f64);
    CHECK(m.state_dict().at("count").dtype() == DType::i64);  // integer buffers stay
    CHECK_THROWS_AS(stale.backward(), Error);

    // it trains in f64, and an optimizer built before to() follows the conversion
    const ag::Variable x64 = ag::constant(Tensor::full({1, 2}, 1.0, DType::f64));
    nn::SGD sgd(m.parameters(), 0.1, 0.9);
    ag::sum(m(x64)).backward();
    sgd.step();
    CHECK(sgd.velocity(1).dtype() == DType::f64);
    m.to(DType::f32);
    m.zero_grad();
    ag::sum(m(x)).backward();
    sgd.step();
    CHECK(sgd.velocity(1).dtype() == DType::f32);

    // the layers' own to() returns the layer
    nn::Linear lin = nn::Linear(2, 2).to(DType::f64);
    CHECK(lin.weight.dtype() == DType::f64);
    CHECK(lin(ag::constant(Tensor::zeros({1, 2}, DType::f64))).dtype() == DType::f64);
    nn::Sequential net = nn::Sequential{nn::Conv(1, 2, {3}), nn::ReLU()}.to(DType::bf16);
    CHECK(net.parameters()[0].dtype() == DType::bf16);
    CHECK_THROWS_AS(lin.to(DType::i32), Error);
}

TEST_CASE("Sequential is built from layer values, in-place construction or shared_ptrs", "[nn]") {
    manual_seed(10);
    nn::Linear first(4, 3);
    nn::Sequential net{first, nn::ReLU(), nn::Linear(3, 2)};  // `first` is copied: it shares its weights
    net.add<nn::Tanh>().add<nn::LeakyReLU>(0.2).add(std::make_shared<nn::Sigmoid>());
    CHECK(net.size() == 6);
    CHECK(net.parameters().size() == 4);
    CHECK(net.parameters()[0].same(first.weight));
    const ag::Variable y = net(ag::constant(Tensor::full({5, 4}, 0.5, DType::f32)));
    CHECK(y.shape() == Shape{5, 2});

    // nesting, and modules moved around as values
    nn::Sequential encoder{nn::Conv(1, 2, nn::ConvOptions{3, 3}.padding(1)), nn::Flatten()};
    nn::Sequential whole{std::move(encoder), nn::Linear(2 * 4 * 4, 3), nn::Unflatten({3, 1})};
    nn::Sequential moved = std::move(whole);
    CHECK(moved.named_parameters().front().first == "0.0.weight");
    CHECK(moved(ag::constant(Tensor::zeros({2, 1, 4, 4}, DType::f32))).shape() == Shape{2, 3, 1});
    nn::Sequential copy = moved;  // copies share parameters
    CHECK(copy.parameters()[0].same(moved.parameters()[0]));
    nn::Sequential nested;
    nested.add(copy);  // a Sequential inside a Sequential
    CHECK(nested.named_parameters().front().first == "0.0.0.weight");
}

TEST_CASE("ConvOptions chain in any order; Conv rejects output_padding", "[nn]") {
    const auto o = nn::ConvOptions{3, 3}.padding(1).stride(2);
    CHECK(o.kernel() == Shape{3, 3});
    CHECK(o.stride() == Shape{2});
    CHECK(o.padding() == Shape{1});
    CHECK(o.groups() == 1);
    CHECK(o.bias());
    nn::Conv c(2, 4, nn::ConvOptions{3, 3}.stride({2, 1}).groups(2));
    CHECK(c.weight.shape() == Shape{4, 1, 3, 3});
    CHECK(c.options().stride() == Shape{2, 1});
    CHECK(c.options().padding() == Shape{0, 0});  // one number broadcast to every axis
    CHECK(c.geometry({1, 2, 9, 9}).out_size == Shape{4, 7});
    nn::Conv k(1, 1, {5});  // just a kernel
    CHECK(k.weight.shape() == Shape{1, 1, 5});

    try {
        nn::Conv bad(1, 2, nn::ConvOptions{3}.stride(2).output_padding(1));
        FAIL("Conv accepted output_padding");
    } catch (const Error& e) {
        CHECK(e.key() == "output_padding");
        CHECK(std::string(e.what()).find("ConvTranspose") != std::string::npos);
    }
    CHECK_NOTHROW(nn::ConvTranspose(1, 2, nn::ConvOptions{3}.stride(2).output_padding(1)));
    CHECK_THROWS_AS(nn::Conv(1, 2, nn::ConvOptions{3, 3}.stride({1, 2, 3})), Error);  // 3 values, 2 axes
    CHECK_THROWS_AS(nn::Conv(1, 2, nn::ConvOptions{3}.padding(-1)), Error);
    CHECK_THROWS_AS(nn::Conv(1, 2, nn::ConvOptions(Shape{})), Error);
    CHECK_THROWS_AS(nn::Conv(3, 2, nn::ConvOptions{3}.groups(2)), Error);
}

TEST_CASE("Checkpoints round-trip and refuse mismatched shapes", "[nn]") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "tapegrad_test_ckpt";
    fs::remove_all(dir);
    manual_seed(9);
    nn::Linear a(3, 2), b(3, 2), c(2, 2);
    nn::save_checkpoint(a, dir.string());
    CHECK(fs::exists(dir / "gen-00000001" / "model.weight.npy"));
    CHECK(nn::read_state_dict(dir.string()).at("weight").shape() == Shape{2, 3});
    nn::load_checkpoint(b, dir.string());
    CHECK(max_abs_diff(a.weight.value(), b.weight.value()) == 0);
    CHECK(max_abs_diff(a.bias.value(), b.bias.value()) == 0);
    const Tensor before = c.weight.value().clone();
    CHECK_THROWS_AS(nn::load_checkpoint(c, dir.string()), Error);
    CHECK(max_abs_diff(c.weight.value(), before) == 0);
    CHECK_THROWS_AS(nn::load_checkpoint(c, (dir / "missing").string()), Error);

    // a file the module does not have: an error when strict, reported otherwise
    nn::Linear no_bias(3, 2, false);
    try {
        nn::load_checkpoint(no_bias, dir.string());
        FAIL("loaded a checkpoint with an unexpected entry");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("unexpected keys: bias") != std::string::npos);
    }
    CHECK(nn::load_checkpoint(no_bias, dir.string(), false).unexpected == std::vector<std::string>{"bias"});
    CHECK(max_abs_diff(a.weight.value(), no_bias.weight.value()) == 0);

    // buffers, nested names and bf16 (saved as f32) come back
    WithBuffer src, dst;
    src.to(DType::bf16);
    dst.to(DType::bf16);
    nn::save_checkpoint(src, dir.string());
    CHECK(nn::read_state_dict(dir.string()).contains("inner.weight"));
    CHECK(nn::read_state_dict(dir.string()).contains("running"));
    nn::load_checkpoint(dst, dir.string());
    for (const auto& [name, t] : dst.state_dict()) {
        INFO(name);
        CHECK(t.dtype() == src.state_dict().at(name).dtype());
        CHECK(max_abs_diff(t, src.state_dict().at(name)) == 0);
    }
    fs::remove_all(dir);
}

TEST_CASE("A small autoencoder learns a fixed batch", "[nn]") {
    manual_seed(1);
    nn::Sequential model;
    model.add<nn::Conv>(1, 8, nn::ConvOptions{3, 3}.stride(2).padding(1))
        .add<nn::ReLU>()
        .add<nn::ConvTranspose>(8, 1, nn::ConvOptions{3, 3}.stride(2).padding(1).output_padding(1));
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
