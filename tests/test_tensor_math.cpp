// Eager element-wise math (tapegrad/ops/math.hpp) and its differentiable counterparts: hand-computed
// broadcasting and promotion, every op against PyTorch 1.13 goldens
// (tests/golden/tensor_math/gen.py), the vector functors at every instruction set against
// their scalar form bit for bit, exp's error against the correctly rounded value, f64
// gradcheck and gradgradcheck of the new ag ops, and the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor_helpers.hpp"
#include "isas.hpp"
#include "tapegrad/core/simd.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/ops/functors.hpp"
#include "tapegrad/tapegrad.hpp"

using namespace tg;
using testing::golden;

namespace {

// Same dtype, shape, NaN positions; other values within rel·|want| (0: exactly equal).
void check_golden(const std::string& name, const Tensor& got, double rel = 0) {
    INFO(name);
    const Tensor want = golden("tensor_math", name);
    REQUIRE(dtype_name(got.dtype()) == std::string(dtype_name(want.dtype())));
    REQUIRE(got.shape() == want.shape());
    const std::vector<double> g = got.values(), w = want.values();
    for (std::size_t i = 0; i < g.size(); ++i) {
        INFO("element " << i << ": got " << g[i] << ", want " << w[i]);
        if (std::isnan(w[i])) CHECK(std::isnan(g[i]));
        else if (rel == 0 || std::isinf(w[i])) CHECK(g[i] == w[i]);
        else CHECK(std::fabs(g[i] - w[i]) <= rel * std::fabs(w[i]) + 1e-37);
    }
}

template <class T>
std::uint64_t bits(T v) {
    std::uint64_t b = 0;
    std::memcpy(&b, &v, sizeof v);
    return b;
}

}  // namespace

TEST_CASE("result_dtype: PyTorch promotion", "[tensor-math]") {
    CHECK(result_dtype(DType::f32, DType::i64) == DType::f32);
    CHECK(result_dtype(DType::b8, DType::f16) == DType::f16);
    CHECK(result_dtype(DType::f16, DType::bf16) == DType::f32);
    CHECK(result_dtype(DType::f32, DType::f64) == DType::f64);
    CHECK(result_dtype(DType::i32, DType::i64) == DType::i64);
    CHECK(result_dtype(DType::b8, DType::i32) == DType::i32);
    CHECK(result_dtype(DType::f32, 2.5) == DType::f32);
    CHECK(result_dtype(DType::f16, 1e10) == DType::f16);
    CHECK(result_dtype(DType::i32, 2.0) == DType::i32);
    CHECK(result_dtype(DType::i32, 2.5) == DType::f32);
    CHECK(result_dtype(DType::b8, 3.0) == DType::i64);
    const Tensor f = Tensor::from({2}, {1.5, -2}, DType::f32);
    CHECK((f * 2.0).dtype() == DType::f32);
    CHECK((Tensor::from({1}, {3}, DType::i32) / Tensor::from({1}, {2}, DType::i32)).dtype() == DType::f32);
    CHECK((Tensor::from({1}, {1}, DType::f16) + Tensor::from({1}, {1}, DType::bf16)).dtype() == DType::f32);
}

TEST_CASE("arithmetic: hand-computed broadcasting", "[tensor-math]") {
    const Tensor a = Tensor::from({2, 1}, {1, 2}), b = Tensor::from({3}, {10, 20, 30});
    CHECK((a + b).shape() == Shape{2, 3});
    CHECK((a + b).values() == std::vector<double>{11, 21, 31, 12, 22, 32});
    CHECK((a - b).values() == std::vector<double>{-9, -19, -29, -8, -18, -28});
    CHECK((b * a).values() == std::vector<double>{10, 20, 30, 20, 40, 60});
    CHECK((b / a).values() == std::vector<double>{10, 20, 30, 5, 10, 15});
    CHECK((1.0 - a).values() == std::vector<double>{0, -1});
    CHECK((6.0 / a).values() == std::vector<double>{6, 3});
    const Tensor i = Tensor::from({3}, {7, -7, 2147483647}, DType::i32);
    CHECK((i + 1.0).values() == std::vector<double>{8, -6, -2147483648.0});  // wraps, as PyTorch
    CHECK((i * 2.5).dtype() == DType::f32);
    // A strided view as an operand: the transpose of [[1, 2], [3, 4]].
    const Tensor m = Tensor::from({2, 2}, {1, 2, 3, 4}).permute({1, 0});
    CHECK((m + Tensor::from({2}, {0, 10})).values() == std::vector<double>{1, 13, 2, 14});
}

TEST_CASE("compound operators write in place", "[tensor-math]") {
    Tensor a = Tensor::from({2, 2}, {1, 2, 3, 4});
    const void* storage = a.storage_id();
    const auto v0 = a.version();
    a += Tensor::from({2}, {10, 20});
    a *= 2.0;
    CHECK(a.values() == std::vector<double>{22, 44, 26, 48});
    CHECK(a.storage_id() == storage);
    CHECK(a.version() == v0 + 2);
    Tensor view = a.permute({1, 0});  // strided: writes through to a
    view -= Tensor::from({2, 1}, {2, 4});
    CHECK(a.values() == std::vector<double>{20, 40, 24, 44});
    Tensor ints = Tensor::from({2}, {1, 2}, DType::i64);
    ints += 3.0;
    CHECK(ints.values() == std::vector<double>{4, 5});
    CHECK_THROWS_WITH(ints /= 2.0, Catch::Contains("operator/=: the result is f32, which the left operand (i64 [2]) cannot hold"));
    CHECK_THROWS_WITH(ints += Tensor::from({2}, {1, 1}), Catch::Contains("operator+=: the result is f32"));
    Tensor small = Tensor::from({2}, {1, 2});
    CHECK_THROWS_WITH(small += Tensor::from({2, 2}, {1, 2, 3, 4}),
                      Catch::Contains("operator+=: the result has shape [2, 2], the left operand [2]"));
}

TEST_CASE("bool dtype: conversions, printing, npy", "[tensor-math]") {
    const Tensor m = Tensor::from({3}, {0, 2, std::nan("")}, DType::b8);
    CHECK(dtype_name(m.dtype()) == std::string("bool"));
    CHECK(dtype_size(DType::b8) == 1);
    CHECK(m.values() == std::vector<double>{0, 1, 1});
    CHECK(m.to(DType::f32).values() == std::vector<double>{0, 1, 1});
    CHECK(dtype_from_name("bool", "dtype") == DType::b8);
    CHECK(to_string(m) == "tensor([False,  True,  True], shape=[3], dtype=bool)");
    const Tensor g = golden("tensor_math", "mask");
    CHECK(g.dtype() == DType::b8);
    const auto p = std::filesystem::temp_directory_path() / "tg_tensor_math_mask.npy";
    write_npy(p.string(), g);
    CHECK(read_npy(p.string()).values() == g.values());
    std::filesystem::remove(p);
}

TEST_CASE("element-wise functions against PyTorch", "[tensor-math]") {
    const Tensor u = golden("tensor_math", "u");
    check_golden("u_abs", tg::abs(u));
    check_golden("u_neg", neg(u));
    check_golden("u_relu", relu(u));
    check_golden("u_exp", tg::exp(u), 3e-7);
    check_golden("u_log", tg::log(u), 3e-7);
    check_golden("u_sqrt", tg::sqrt(u));
    check_golden("u_rsqrt", rsqrt(u), 3e-7);
    check_golden("u_sin", tg::sin(u), 3e-7);
    check_golden("u_cos", tg::cos(u), 3e-7);
    check_golden("u_tanh", tg::tanh(u), 3e-7);
    check_golden("u_sigmoid", sigmoid(u), 3e-7);
    check_golden("u_pow2", tg::pow(u, 2.0), 3e-7);
    check_golden("u_pow2_5", tg::pow(u, 2.5), 3e-7);
    check_golden("u_clamp", clamp(u, -0.5, 0.75));
    // relu and clamp keep NaN; relu(−0) is −0 as in PyTorch.
    CHECK(std::signbit(relu(Tensor::from({1}, {-0.0})).item()));
}

TEST_CASE("arithmetic, comparisons and masks against PyTorch", "[tensor-math]") {
    const Tensor a = golden("tensor_math", "a"), b = golden("tensor_math", "b"), ia = golden("tensor_math", "ia"), ib = golden("tensor_math", "ib");
    const Tensor mask = golden("tensor_math", "mask"), mask1 = golden("tensor_math", "mask1");
    check_golden("add_ab", a + b);
    check_golden("sub_ab", a - b);
    check_golden("mul_ab", a * b);
    check_golden("div_ab", a / b);
    check_golden("pow_ab", tg::pow(tg::abs(a), b), 3e-7);
    check_golden("add_as", a + 2.5);
    check_golden("rsub_as", 2.5 - a);
    check_golden("rdiv_as", 2.5 / a, 3e-7);  // PyTorch computes 2.5 / a as reciprocal(a)·2.5: two roundings
    check_golden("mul_as", a * -3.0);
    check_golden("div_as", a / 3.0);
    check_golden("add_iab", ia + ib);
    check_golden("sub_iab", ia - ib);
    check_golden("mul_iab", ia * ib);
    check_golden("div_iab", ia / ib);
    check_golden("mul_ia2", ia * 2.0);
    check_golden("mul_ia2_5", ia * 2.5);
    check_golden("add_ia_b", ia + b);
    check_golden("abs_ia", tg::abs(ia));
    check_golden("neg_ib", neg(ib));
    check_golden("exp_ia", tg::exp(ia), 3e-7);
    check_golden("eq_ab", a == b);
    check_golden("ne_ab", a != b);
    check_golden("lt_ab", a < b);
    check_golden("le_ab", a <= b);
    check_golden("gt_ab", a > b);
    check_golden("ge_ab", a >= b);
    check_golden("eq_as", a == 0.5);
    check_golden("ne_as", a != 0.5);
    check_golden("lt_as", a < 0.5);
    check_golden("le_as", a <= 0.5);
    check_golden("gt_as", a > 0.5);
    check_golden("ge_as", a >= 0.5);
    check_golden("eq_ia_b", eq(ia, ib));
    check_golden("where", where(mask, a, b));
    check_golden("masked_fill", masked_fill(a, mask1, -7.0));
    check_golden("logical_and", logical_and(mask, gt(a, 0.0)));
    check_golden("logical_or", logical_or(mask, a));
    check_golden("logical_not", logical_not(a));
}

TEST_CASE("vector functors equal their scalar form bit for bit at every ISA", "[tensor-math][simd]") {
    testing::IsaGuard guard;
    std::mt19937 rng(17);
    std::vector<float> xf;
    std::vector<double> xd;
    for (float s : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-40f, -1e-40f, 88.72f, 88.73f, 89.0f, -103.9f, -104.0f, 1e30f,
                    0.6249999f, 0.625f, -0.625f, 44.4f, 44.6f, -44.6f, 1e-3f, -2e-20f})
        xf.push_back(s);
    std::uniform_real_distribution<float> d(-110.0f, 110.0f), near(-4.0f, 4.0f);
    while (xf.size() < 500) xf.push_back(near(rng));  // tanh's and sigmoid's curved part
    while (xf.size() < 1000) xf.push_back(d(rng));
    for (float v : xf) xd.push_back(static_cast<double>(v) * 1.000001);
    auto check = [&](const auto& f, const char* name) {
        INFO(name);
        using F = std::decay_t<decltype(f)>;
        auto run = [&](const auto& x) {
            using T = typename std::decay_t<decltype(x)>::value_type;
            std::vector<T> ref(x.size());
            for (std::size_t k = 0; k < x.size(); ++k) ref[k] = f(x[k]);
            for (simd::Isa isa : tg::testing::tested_isas()) {
                simd::force(isa);
                for (std::size_t n : {x.size(), std::size_t{7}, std::size_t{33}}) {
                    std::vector<T> out(n + 1, T(12345));
                    vector_map(f, x.data(), out.data(), static_cast<std::int64_t>(n));
                    INFO(simd::isa_name(isa) << " n=" << n);
                    for (std::size_t k = 0; k < n; ++k) {
                        INFO("x=" << x[k]);
                        REQUIRE(bits(out[k]) == bits(ref[k]));
                    }
                    REQUIRE(out[n] == T(12345));
                }
            }
        };
        if constexpr (F::template vector<float>) run(xf);
        if constexpr (F::template vector<double>) run(xd);
    };
    check(fn::Neg{}, "neg");
    check(fn::Abs{}, "abs");
    check(fn::Relu{}, "relu");
    check(fn::Sqrt{}, "sqrt");
    check(fn::Rsqrt{}, "rsqrt");
    check(fn::Exp{}, "exp");
    check(fn::Softplus{}, "softplus");
    check(fn::Tanh{}, "tanh");
    check(fn::Sigmoid{}, "sigmoid");
    check(fn::Square{}, "square");
    check(fn::Clamp<double>{-0.5, 0.75}, "clamp");
}

TEST_CASE("exp ulp: f32 exp within 1.01 ulp of e^x and 1 ulp of std::exp", "[tensor-math]") {
    // Every 409th (TG_EXP_SWEEP_STEP) f32 bit pattern of magnitude ≤ 104 (both signs, up to 89) against exp in f64;
    // the error is |got − e^x| in units of the f32 spacing at the result.
    const fn::Exp f;
    double worst = 0;
    const std::uint32_t kStep = std::getenv("TG_EXP_SWEEP_STEP") ? static_cast<std::uint32_t>(std::atoi(std::getenv("TG_EXP_SWEEP_STEP"))) : 409;
    std::uint32_t end, count = 0, max_bits = 0;
    const float top = 104.0f;
    std::memcpy(&end, &top, 4);
    for (std::uint32_t k = 0; k <= end; k += kStep, ++count) {
        float x;
        std::memcpy(&x, &k, 4);
        for (float s : {x, -x}) {
            if (s > 89.0f) continue;
            const float got = f(s), libm = std::exp(s);
            std::int64_t gb = 0, lb = 0;
            std::memcpy(&gb, &got, 4);
            std::memcpy(&lb, &libm, 4);
            max_bits = std::max(max_bits, static_cast<std::uint32_t>(std::llabs(gb - lb)));
            const double want = std::exp(static_cast<double>(s));
            const float wf = static_cast<float>(want);
            if (std::isinf(wf)) {
                CHECK(std::isinf(got));
                continue;
            }
            const double ulp = std::max(static_cast<double>(std::nextafter(std::fabs(wf), INFINITY) - std::fabs(wf)),
                                        1.401298464324817e-45);
            worst = std::max(worst, std::fabs(static_cast<double>(got) - want) / ulp);
        }
    }
    INFO("max error " << worst << " ulp over " << count << " magnitudes; max " << max_bits << " ulp from std::exp(float)");
    CHECK(worst < 1.01);
    CHECK(max_bits <= 1);
    if (std::getenv("TG_EXP_SWEEP_STEP")) WARN("f32 exp: max error " << worst << " ulp versus exp in f64, max " << max_bits << " ulp from std::exp(float), " << count << " magnitudes");
}

TEST_CASE("tanh and sigmoid ulp: f32 tanh within 1.5 ulp and sigmoid within 2.5 ulp of the f64 functions", "[tensor-math]") {
    // Every 2039th f32 bit pattern of magnitude up to 60 (both signs; TG_EXP_SWEEP_STEP sets
    // the step, as for exp): the error is |got − f(x) in f64| in units of the f32 spacing at
    // the result. (Every 409th: the same maxima, 1.27 and 2.08.)
    const fn::Tanh tanh_f;
    const fn::Sigmoid sigmoid_f;
    double worst_tanh = 0, worst_sigmoid = 0;
    std::uint32_t end, count = 0;
    const float top = 60.0f;
    std::memcpy(&end, &top, 4);
    auto ulps = [](float got, double want) {
        const float wf = static_cast<float>(want);
        const double ulp = std::max(static_cast<double>(std::nextafter(std::fabs(wf), INFINITY) - std::fabs(wf)), 1.401298464324817e-45);
        return std::fabs(static_cast<double>(got) - want) / ulp;
    };
    const std::uint32_t kStep = std::getenv("TG_EXP_SWEEP_STEP") ? static_cast<std::uint32_t>(std::atoi(std::getenv("TG_EXP_SWEEP_STEP"))) : 2039;
    for (std::uint32_t k = 0; k <= end; k += kStep, ++count) {
        float x;
        std::memcpy(&x, &k, 4);
        for (float s : {x, -x}) {
            const double xd = static_cast<double>(s);
            worst_tanh = std::max(worst_tanh, ulps(tanh_f(s), std::tanh(xd)));
            worst_sigmoid = std::max(worst_sigmoid, ulps(sigmoid_f(s), 1.0 / (1.0 + std::exp(-xd))));
        }
    }
    INFO("tanh " << worst_tanh << " ulp, sigmoid " << worst_sigmoid << " ulp over " << count << " magnitudes");
    CHECK(worst_tanh < 1.5);
    CHECK(worst_sigmoid < 2.5);
    CHECK(std::isnan(tanh_f(NAN)));
    CHECK(std::isnan(sigmoid_f(NAN)));
    CHECK(tanh_f(INFINITY) == 1.0f);
    CHECK(tanh_f(-INFINITY) == -1.0f);
    CHECK(std::signbit(tanh_f(-0.0f)));
    CHECK(sigmoid_f(-INFINITY) == 0.0f);
    CHECK(sigmoid_f(INFINITY) == 1.0f);
    if (std::getenv("TG_EXP_SWEEP_STEP")) WARN("f32 tanh: max error " << worst_tanh << " ulp, sigmoid " << worst_sigmoid << " ulp");
}

TEST_CASE("ag: new ops pass f64 gradcheck and gradgradcheck", "[tensor-math][gradcheck]") {
    using ag::Variable;
    const Tensor x = Tensor::from({2, 3}, {0.3, -1.2, 0.8, 1.7, -0.4, 2.1}, DType::f64);
    const Tensor pos = Tensor::from({2, 3}, {0.3, 1.2, 0.8, 1.7, 0.4, 2.1}, DType::f64);
    const Tensor y = Tensor::from({3}, {0.5, -1.5, 2.0}, DType::f64);
    const Tensor mask = Tensor::from({2, 1}, {1, 0}, DType::b8);
    struct Case {
        const char* name;
        ag::Function f;
        std::vector<Tensor> inputs;
    };
    const std::vector<Case> cases = {
        {"abs", [](const auto& v) { return ag::abs(v[0]); }, {x}},
        {"sin", [](const auto& v) { return ag::sin(v[0]); }, {x}},
        {"cos", [](const auto& v) { return ag::cos(v[0]); }, {x}},
        {"pow scalar", [](const auto& v) { return ag::pow(v[0], 2.5); }, {pos}},
        {"pow tensor", [](const auto& v) { return ag::pow(v[0], v[1]); }, {pos, y}},
        {"clamp", [](const auto& v) { return ag::clamp(v[0], -0.5, 1.0); }, {x}},
        {"where", [mask](const auto& v) { return ag::where(mask, v[0], v[1]); }, {x, y}},
        {"masked_fill", [](const auto& v) { return ag::masked_fill(v[0], Tensor::from({3}, {0, 1, 0}, DType::b8), 3.0); }, {x}},
        {"v - s", [](const auto& v) { return v[0] - 2.0; }, {x}},
        {"s - v", [](const auto& v) { return 2.0 - v[0]; }, {x}},
        {"v / s", [](const auto& v) { return v[0] / 2.0; }, {x}},
        {"s / v", [](const auto& v) { return 2.0 / v[0]; }, {pos}},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        const auto g1 = ag::gradcheck(c.f, c.inputs);
        INFO(g1.table());
        CHECK(g1.ok);
        const auto g2 = ag::gradgradcheck(c.f, c.inputs);
        INFO(g2.table());
        CHECK(g2.ok);
    }
    // The documented subgradients: abs at 0 is 0; clamp passes the gradient at its bounds.
    ag::Variable z(Tensor::from({3}, {0, -0.5, 1.0}, DType::f64), true);
    ag::sum(ag::add(ag::abs(z), ag::clamp(z, -0.5, 1.0))).backward();
    CHECK(z.grad().values() == std::vector<double>{0 + 1, -1 + 1, 1 + 1});
}

TEST_CASE("eager math errors name the function and the argument", "[tensor-math]") {
    const Tensor a = Tensor::from({2, 3}, std::vector<double>(6, 1)), b = Tensor::from({4}, {1, 2, 3, 4});
    CHECK_THROWS_WITH(a + b, Catch::Contains("add: shapes [2, 3] and [4] do not broadcast"));
    CHECK_THROWS_WITH(lt(a, b), Catch::Contains("lt: shapes [2, 3] and [4] do not broadcast"));
    CHECK_THROWS_WITH(where(a, a, a), Catch::Contains("where: mask must be a bool (b8) tensor, got f32 [2, 3]"));
    CHECK_THROWS_WITH(masked_fill(a, Tensor::from({3}, {1, 0, 1}), 0), Catch::Contains("masked_fill: mask must be a bool (b8) tensor"));
    CHECK_THROWS_WITH(masked_fill(a, Tensor::from({2, 2, 1}, {1, 0, 1, 0}, DType::b8), 0),
                      Catch::Contains("masked_fill: mask [2, 2, 1] does not broadcast to the input's shape [2, 3]"));
    CHECK_THROWS_WITH(tg::exp(Tensor()), Catch::Contains("exp: input is undefined"));
    CHECK_THROWS_WITH(Tensor() * a, Catch::Contains("mul: a is undefined"));
    CHECK_THROWS_WITH(where(Tensor::from({1}, {1}, DType::b8), a, Tensor()), Catch::Contains("where: b is undefined"));
    const Tensor m = Tensor::from({2}, {1, 0}, DType::b8);
    CHECK_THROWS_WITH(m + m, Catch::Contains("add: arithmetic on two bool tensors is not defined"));
    CHECK_THROWS_WITH(neg(m), Catch::Contains("neg: not defined for a bool tensor [2]"));
}
