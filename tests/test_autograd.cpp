// The tape: gradients by hand, accumulation, the in-place check, no-grad, hooks,
// retain_graph, create_graph, gradient validation and the 100 000-node chain.
#include <catch2/catch.hpp>

#include <thread>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/autograd/variable.hpp"

using namespace tg;
using namespace tg::ag;

namespace {

Tensor vec(const std::vector<double>& v, DType dt = DType::f64) {
    return Tensor::from({static_cast<std::int64_t>(v.size())}, v, dt);
}

// Throws and the message contains every fragment.
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("gradient of a small expression matches the hand derivative", "[autograd]") {
    // f = Σ (x·y + x/y), ∂f/∂x = y + 1/y, ∂f/∂y = x − x/y²
    Variable x = param(vec({1, 2, 3}), "x"), y = param(vec({2, -1, 0.5}), "y");
    Variable f = sum(x * y + x / y);
    f.backward();
    const auto gx = x.grad().values(), gy = y.grad().values();
    const std::vector<double> xv{1, 2, 3}, yv{2, -1, 0.5};
    for (int i = 0; i < 3; ++i) {
        CHECK(gx[i] == Approx(yv[i] + 1 / yv[i]));
        CHECK(gy[i] == Approx(xv[i] - xv[i] / (yv[i] * yv[i])));
    }
    CHECK(f.op() == "sum");
    CHECK(x.is_leaf());
    CHECK_FALSE(f.is_leaf());
}

TEST_CASE("gradients accumulate over backward calls and over uses", "[autograd]") {
    Variable x = param(vec({3}));
    Variable f = x * x + x;  // used three times: 2x + 1 = 7
    f.backward();
    CHECK(x.grad().item() == 7);
    Variable f2 = x * x + x;
    f2.backward();
    CHECK(x.grad().item() == 14);
    x.zero_grad();
    CHECK_FALSE(x.has_grad());
}

TEST_CASE("broadcasting gradients are summed back to the input shape", "[autograd]") {
    Variable a = param(Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6}, DType::f64));
    Variable b = param(Tensor::from({3}, {10, 20, 30}, DType::f64));
    sum(a * b).backward();
    CHECK(b.grad().values() == std::vector<double>{5, 7, 9});
    CHECK(a.grad().values() == std::vector<double>{10, 20, 30, 10, 20, 30});
    const std::string msg = error_of([&] { add(a, constant(Tensor::zeros({2}, DType::f64))); });
    CHECK_THAT(msg, Catch::Contains("add") && Catch::Contains("[2, 3]") && Catch::Contains("[2]"));
}

TEST_CASE("a value modified in place after it was saved is an error at backward", "[autograd]") {
    Variable x = param(vec({1, 2}), "x");
    Variable w = param(vec({3, 4}), "w");
    Variable y = sum(x * w);  // mul saves x and w
    w.assign(vec({5, 6}));    // an optimizer step before backward
    const std::string msg = error_of([&] { y.backward(); });
    CHECK_THAT(msg, Catch::Contains("'mul'") && Catch::Contains("input 1 ('w')") && Catch::Contains("in place"));
    // a raw write through a Tensor handle, announced with bump_version, is caught the same way
    Variable z = exp(x);  // exp saves its result
    Tensor zv = z.value();
    zv.data<double>()[0] = 0;
    zv.bump_version();
    CHECK_THAT(error_of([&] { sum(z).backward(); }), Catch::Contains("'exp'") && Catch::Contains("result"));
    // an op that saved nothing does not care
    Variable s = sum(x + w);
    w.assign(vec({7, 8}));
    s.backward();
    CHECK(x.grad().values() == std::vector<double>{1, 1});
}

TEST_CASE("no-grad guard records nothing and is thread-local and nestable", "[autograd]") {
    Variable x = param(vec({1, 2}));
    {
        NoGradGuard ng;
        Variable y = x * x;
        CHECK_FALSE(y.requires_grad());
        CHECK(y.is_leaf());
        {
            GradModeGuard on(true);
            CHECK((x * x).requires_grad());
        }
        CHECK_FALSE(grad_enabled());
        bool other_thread = false;
        std::thread([&] { other_thread = grad_enabled() && (x * x).requires_grad(); }).join();
        CHECK(other_thread);  // the guard is this thread's only
        CHECK_THAT(error_of([&] { y.backward(vec({1, 1})); }), Catch::Contains("does not require a gradient"));
    }
    CHECK(grad_enabled());
    CHECK((x * x).requires_grad());
}

TEST_CASE("hooks see and may replace the gradient of leaves and intermediates", "[autograd]") {
    Variable x = param(vec({1, 2}));
    Variable h = x * x;
    std::vector<double> seen;
    h.register_hook([&](const Variable& g) {
        seen = g.value().values();
        return g * 10.0;  // replaces the gradient flowing on
    });
    int leaf_calls = 0;
    x.register_hook([&](const Variable& g) {
        ++leaf_calls;
        CHECK(g.value().values() == std::vector<double>{40, 80});  // 20·2x, the total
        return Variable();                                          // keep it
    });
    sum(h + h).backward();  // h used twice: its hook sees the sum 2
    CHECK(seen == std::vector<double>{2, 2});
    CHECK(leaf_calls == 1);
    CHECK(x.grad().values() == std::vector<double>{40, 80});
    CHECK_THROWS_AS(constant(vec({1})).register_hook([](const Variable&) { return Variable(); }), Error);
}

TEST_CASE("a second backward through a freed graph is a clear error; retain_graph allows it", "[autograd]") {
    Variable x = param(vec({2}));
    Variable y = exp(x) * x;
    y.backward({}, /*retain_graph=*/true);
    const double g1 = x.grad().item();
    y.backward();  // allowed: the first kept the graph; this one frees it
    CHECK(x.grad().item() == Approx(2 * g1));
    const std::string msg = error_of([&] { y.backward(); });
    CHECK_THAT(msg, Catch::Contains("second time") && Catch::Contains("retain_graph"));
}

TEST_CASE("ag::grad returns gradients and create_graph gives second derivatives", "[autograd]") {
    Variable x = param(vec({1.5, -2}));
    Variable y = sum(x * x * x);  // dy/dx = 3x², d²y/dx² = 6x
    auto g = grad({y}, {x}, {}, false, true);
    REQUIRE(g[0].defined());
    CHECK(g[0].value().values() == std::vector<double>{6.75, 12});
    CHECK_FALSE(x.has_grad());  // grad() does not accumulate
    auto gg = grad({sum(g[0])}, {x});
    CHECK(gg[0].value().values() == std::vector<double>{9, -12});
    // an input the output does not depend on gets an undefined gradient
    Variable z = param(vec({1}));
    CHECK_FALSE(grad({sum(x * x)}, {z})[0].defined());
    // backward(create_graph) keeps a graph on .grad; differentiating it again works
    Variable w = param(vec({3}));
    (w * w * w).backward({}, false, true);
    Variable gw = w.grad_variable();
    CHECK(gw.requires_grad());
    auto second = grad({gw}, {w});
    CHECK(second[0].item() == 18);
    w.zero_grad();
}

TEST_CASE("ag::grad with respect to an intermediate variable", "[autograd]") {
    Variable x = param(vec({1, 2}));
    Variable h = x * x;
    Variable y = sum(exp(h));
    auto g = grad({y}, {h, x});
    const auto gh = g[0].value().values(), gx = g[1].value().values();
    CHECK(gh[0] == Approx(std::exp(1.0)));
    CHECK(gx[1] == Approx(std::exp(4.0) * 4));
}

TEST_CASE("every gradient an op returns is checked against its input", "[autograd]") {
    Variable x = param(Tensor::zeros({2, 3}, DType::f64));
    Variable bad_shape = record("bad_shape", x.value().clone(), {x}, {},
                                [](const SavedContext&, const Variable& g) -> Grads { return {reshape(g, {3, 2})}; });
    CHECK_THAT(error_of([&] { sum(bad_shape).backward(); }),
               Catch::Contains("'bad_shape'") && Catch::Contains("input 0") && Catch::Contains("[3, 2]"));
    Variable bad_dtype = record("bad_dtype", x.value().clone(), {x}, {}, [](const SavedContext&, const Variable& g) -> Grads {
        return {constant(g.value().to(DType::f32))};
    });
    CHECK_THAT(error_of([&] { sum(bad_dtype).backward(); }), Catch::Contains("'bad_dtype'") && Catch::Contains("f32"));
    Variable bad_count = record("bad_count", x.value().clone(), {x}, {},
                                [](const SavedContext&, const Variable& g) -> Grads { return {g, g}; });
    CHECK_THAT(error_of([&] { sum(bad_count).backward(); }), Catch::Contains("2 gradients for 1 inputs"));
    // seeds are checked too
    Variable y = x * x;
    CHECK_THAT(error_of([&] { y.backward(); }), Catch::Contains("must be given"));
    CHECK_THAT(error_of([&] { y.backward(Tensor::zeros({3}, DType::f64)); }), Catch::Contains("[3]"));
}

TEST_CASE("a chain of 100 000 ops back-propagates and is freed without recursion", "[autograd]") {
    Variable x = param(vec({1}));
    {
        Variable y = x;
        for (int i = 0; i < 100000; ++i) y = affine(y, 1.0, 0.5);  // y = x + 50 000
        CHECK(y.item() == 50001);
        y.backward({}, true);
        CHECK(x.grad().item() == 1);
        // y (and the chain) is destroyed here with the graph still intact
    }
    {
        Variable y = x;
        for (int i = 0; i < 100000; ++i) y = y * constant(vec({1.0}));
        y.backward();
        CHECK(x.grad().item() == 2);
    }
}
