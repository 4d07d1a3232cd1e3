// Every differentiable op outside the conv family: forward values against hand
// computations, then one table of op cases driving f64 gradcheck and gradgradcheck
// (every element: the shapes are tiny).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "tensor_helpers.hpp"
#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/autograd/pool.hpp"

using namespace tg;
using namespace tg::ag;
using testing::rnd;
using testing::vals;

namespace {

struct OpCase {
    std::string name;
    Function f;
    std::vector<Tensor> inputs;
};

std::vector<OpCase> op_cases() {
    const Tensor labels = Tensor::from({3}, {2, 0, 1}, DType::i64);
    const ConvGeometry mp2 = pool_geometry({2, 2, 5, 5}, {3, 3}, {2}, {1});
    const ConvGeometry mp1 = pool_geometry({1, 3, 7}, {2}, {1}, {0}, {2});
    const ConvGeometry mp3 = pool_geometry({1, 2, 3, 4, 4}, {2, 2, 2}, {1, 2, 2});
    const ConvGeometry ap2 = pool_geometry({2, 2, 5, 5}, {3, 3}, {2}, {1});
    const ConvGeometry ap1 = pool_geometry({2, 3, 6}, {2});
    const Tensor labels_2d = Tensor::from({2, 2, 2}, {0, 2, 1, 1, 2, 0, 0, 1}, DType::i64);
    return {
        {"add broadcast", [](auto v) { return add(v[0], v[1]); }, {rnd({2, 3}, 1), rnd({3}, 2)}},
        {"sub broadcast both", [](auto v) { return sub(v[0], v[1]); }, {rnd({2, 1}, 3), rnd({1, 3}, 4)}},
        {"mul", [](auto v) { return mul(v[0], v[1]); }, {rnd({2, 3}, 5), rnd({2, 3}, 6)}},
        {"mul scalar broadcast", [](auto v) { return mul(v[0], v[1]); }, {rnd({2, 3}, 7), rnd({1}, 8)}},
        {"div broadcast", [](auto v) { return div(v[0], v[1]); }, {rnd({3, 1}, 9), rnd({1, 4}, 10, 0.5, 1.5)}},
        {"neg", [](auto v) { return neg(v[0]); }, {rnd({4}, 11)}},
        {"affine", [](auto v) { return affine(v[0], -2.5, 0.3); }, {rnd({2, 2}, 12)}},
        {"exp", [](auto v) { return exp(v[0]); }, {rnd({5}, 13)}},
        {"log", [](auto v) { return log(v[0]); }, {rnd({5}, 14, 0.2, 2)}},
        {"relu", [](auto v) { return relu(v[0]); }, {rnd({6}, 15, -1, 1, 0.1)}},
        {"leaky_relu", [](auto v) { return leaky_relu(v[0], 0.2); }, {rnd({6}, 16, -1, 1, 0.1)}},
        {"sigmoid", [](auto v) { return sigmoid(v[0]); }, {rnd({5}, 17, -3, 3)}},
        {"tanh", [](auto v) { return tanh(v[0]); }, {rnd({5}, 18, -2, 2)}},
        {"softplus", [](auto v) { return softplus(v[0]); }, {rnd({5}, 19, -4, 4)}},
        {"reshape", [](auto v) { return reshape(v[0] * v[0], {3, 4}); }, {rnd({2, 3, 2}, 20)}},
        {"permute", [](auto v) { return permute(v[0], {2, 0, 1}) * v[1]; }, {rnd({2, 3, 4}, 21), rnd({4, 2, 3}, 22)}},
        {"transpose matmul", [](auto v) { return matmul(transpose(v[0]), v[1]); }, {rnd({4, 3}, 23), rnd({4, 2}, 24)}},
        {"slice step", [](auto v) { return slice(v[0], 1, 1, 6, 2) * slice(v[0], 1, 0, 3); },
         {rnd({2, 6, 2}, 25)}},
        {"slice squared", [](auto v) { return mul(slice(v[0], -1, 0, 3), slice(v[0], -1, 2, 5)); }, {rnd({2, 5}, 26)}},
        {"cat", [](auto v) { return cat({v[0], v[1] * v[1], v[2]}, 1); },
         {rnd({2, 1, 3}, 27), rnd({2, 2, 3}, 28), rnd({2, 3, 3}, 29)}},
        {"broadcast_to", [](auto v) { return broadcast_to(v[0], {2, 3, 4}) * v[1]; }, {rnd({3, 1}, 30), rnd({2, 3, 4}, 31)}},
        {"sum_to", [](auto v) { return sum_to(v[0] * v[0], {3, 1}); }, {rnd({2, 3, 4}, 32)}},
        {"sum all", [](auto v) { return sum(v[0] * v[0]); }, {rnd({2, 3}, 33)}},
        {"sum axes keepdim", [](auto v) { return sum(v[0] * v[0], {0, 2}, true); }, {rnd({2, 3, 2}, 34)}},
        {"sum last axis", [](auto v) { return sum(exp(v[0]), {-1}); }, {rnd({3, 4}, 35)}},
        {"mean", [](auto v) { return mean(v[0] * v[0], {1}); }, {rnd({2, 5}, 36)}},
        {"softmax", [](auto v) { return softmax(v[0], 1); }, {rnd({3, 4, 2}, 37, -2, 2)}},
        {"log_softmax", [](auto v) { return log_softmax(v[0], -1); }, {rnd({3, 5}, 38, -2, 2)}},
        {"matmul", [](auto v) { return matmul(v[0], v[1]); }, {rnd({3, 4}, 39), rnd({4, 2}, 40)}},
        {"mse_loss", [](auto v) { return mse_loss(v[0], v[1]); }, {rnd({2, 3}, 41), rnd({2, 3}, 42)}},
        {"cross_entropy", [](auto v) { return cross_entropy(v[0], v[1]); }, {rnd({3, 4}, 43, -2, 2), labels}},
        {"cross_entropy spatial", [](auto v) { return cross_entropy(v[0], v[1]); }, {rnd({2, 3, 2, 2}, 44), labels_2d}},
        {"bce_with_logits", [](auto v) { return bce_with_logits(v[0], v[1]); }, {rnd({2, 3}, 45, -3, 3), rnd({2, 3}, 46, 0, 1)}},
        {"add_channel_bias NCX", [](auto v) { return add_channel_bias(v[0] * v[0], v[1], Layout::NCX); },
         {rnd({2, 3, 2, 2}, 47), rnd({3}, 48)}},
        {"add_channel_bias NXC", [](auto v) { return add_channel_bias(v[0], v[1], Layout::NXC) * v[0]; },
         {rnd({2, 2, 3}, 49), rnd({3}, 50)}},
        {"sqrt", [](auto v) { return sqrt(v[0]); }, {rnd({5}, 51, 0.2, 2)}},
        {"rsqrt", [](auto v) { return rsqrt(v[0]); }, {rnd({5}, 52, 0.2, 2)}},
        {"max_pool 2-d overlapping, padded", [mp2](auto v) { return max_pool(v[0], mp2); }, {rnd({2, 2, 5, 5}, 53)}},
        {"max_pool 1-d dilated, squared", [mp1](auto v) { return mul(max_pool(v[0], mp1), max_pool(v[0], mp1)); },
         {rnd({1, 3, 7}, 54)}},
        {"max_pool 3-d", [mp3](auto v) { return max_pool(v[0], mp3) * max_pool(v[0], mp3); }, {rnd({1, 2, 3, 4, 4}, 55)}},
        {"avg_pool 2-d padded", [ap2](auto v) { return avg_pool(v[0] * v[0], ap2); }, {rnd({2, 2, 5, 5}, 56)}},
        {"avg_pool 1-d", [ap1](auto v) { return avg_pool(v[0], ap1); }, {rnd({2, 3, 6}, 57)}},
    };
}

}  // namespace

TEST_CASE("forward values of the element-wise, shape and reduction ops", "[autograd]") {
    const Variable a = constant(Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6}, DType::f64));
    CHECK(vals(sum(a, {0})) == std::vector<double>{5, 7, 9});
    CHECK(vals(sum(a, {1}, true)) == std::vector<double>{6, 15});
    CHECK(sum(a, {1}, true).shape() == Shape{2, 1});
    CHECK(vals(mean(a)) == std::vector<double>{3.5});
    CHECK(vals(permute(a, {1, 0})) == std::vector<double>{1, 4, 2, 5, 3, 6});
    CHECK(vals(slice(a, 1, 0, 3, 2)) == std::vector<double>{1, 3, 4, 6});
    CHECK(vals(cat({a, slice(a, 1, 2, 3)}, 1)) == std::vector<double>{1, 2, 3, 3, 4, 5, 6, 6});
    CHECK(vals(matmul(a, constant(Tensor::from({3, 1}, {1, 0, -1}, DType::f64)))) == std::vector<double>{-2, -2});
    // transposed operands go to the GEMM with their transpose flag (no copy), in f64 and f32
    for (DType dt : {DType::f64, DType::f32}) {
        const Variable at = constant(a.value().to(dt)), w = constant(Tensor::from({2, 3}, {1, 0, -1, 2, 1, 0}, dt));
        CHECK(vals(matmul(transpose(at), constant(Tensor::from({2, 1}, {1, -1}, dt)))) == std::vector<double>{-3, -3, -3});
        CHECK(vals(matmul(at, transpose(w))) == std::vector<double>{-2, 4, -2, 13});
        const Variable c = constant(Tensor::from({3, 2}, {1, 2, 3, 4, 5, 6}, dt));
        CHECK(vals(matmul(transpose(w), transpose(c))) == std::vector<double>{5, 11, 17, 2, 4, 6, -1, -3, -5});
    }
    CHECK(vals(relu(constant(Tensor::from({3}, {-1, 0, 2}, DType::f64)))) == std::vector<double>{0, 0, 2});
    CHECK(vals(leaky_relu(constant(Tensor::from({2}, {-2, 3}, DType::f64)), 0.5)) == std::vector<double>{-1, 3});
    const auto sm = vals(softmax(constant(Tensor::from({3}, {1, 2, 3}, DType::f64))));
    const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
    CHECK(sm[2] == Approx(std::exp(3.0) / z));
    CHECK(vals(log_softmax(constant(Tensor::from({3}, {1, 2, 3}, DType::f64))))[0] == Approx(1 - std::log(z)));
    // stable for large logits
    const auto big = vals(log_softmax(constant(Tensor::from({2}, {1000, 0}, DType::f64))));
    CHECK(big[0] == Approx(0).margin(1e-12));
    CHECK(big[1] == Approx(-1000));
    CHECK(vals(sigmoid(constant(Tensor::from({2}, {-800, 800}, DType::f64)))) == std::vector<double>{0, 1});
    CHECK(vals(softplus(constant(Tensor::from({2}, {-800, 800}, DType::f64)))) == std::vector<double>{0, 800});
}

TEST_CASE("loss values match hand computations", "[autograd]") {
    // mse: ((1−0)² + (2−4)²)/2 = 2.5
    CHECK(mse_loss(constant(Tensor::from({2}, {1, 2}, DType::f64)), constant(Tensor::from({2}, {0, 4}, DType::f64))).item() == 2.5);
    // cross-entropy of logits [0, ln 3] with label 1: −log(3/4); with label 0: −log(1/4)
    const Variable logits = constant(Tensor::from({2, 2}, {0, std::log(3.0), 0, std::log(3.0)}, DType::f64));
    const Variable labels = constant(Tensor::from({2}, {1, 0}, DType::i64));
    CHECK(cross_entropy(logits, labels).item() == Approx((-std::log(0.75) - std::log(0.25)) / 2));
    // bce: x = 0, t = 1 gives log 2; x = 2, t = 0 gives log(1 + e²)
    const double bce = bce_with_logits(constant(Tensor::from({2}, {0, 2}, DType::f64)), constant(Tensor::from({2}, {1, 0}, DType::f64))).item();
    CHECK(bce == Approx((std::log(2.0) + std::log(1 + std::exp(2.0))) / 2));
    CHECK_THROWS_WITH(cross_entropy(logits, constant(Tensor::from({2}, {1, 2}, DType::i64))),
                      Catch::Contains("label 1 is 2, outside [0, 2)"));
    CHECK_THROWS_WITH(mse_loss(logits, constant(Tensor::zeros({2}, DType::f64))),
                      Catch::Contains("[2, 2]") && Catch::Contains("[2]"));
}

TEST_CASE("every op: f64 gradcheck and gradgradcheck", "[autograd][gradcheck]") {
    for (const OpCase& c : op_cases()) {
        INFO(c.name);
        CheckOptions opt;
        opt.seed = c.inputs.size();
        const CheckReport g1 = gradcheck(c.f, c.inputs, opt);
        INFO(g1.table());
        CHECK(g1.ok);
        const CheckReport g2 = gradgradcheck(c.f, c.inputs, opt);
        INFO(g2.table());
        CHECK(g2.ok);
    }
}

TEST_CASE("element-wise ops in f32, f16 and bf16 agree with f64", "[autograd][gradcheck]") {
    for (const OpCase& c : op_cases()) {
        for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
            INFO(c.name << " " << dtype_name(dt));
            CheckOptions opt;
            opt.roundings = 4;  // chains of up to four rounding ops, forward and backward
            const CheckReport r = check_precision(c.f, c.inputs, dt, 8, opt);
            INFO(r.table());
            CHECK(r.ok);
        }
    }
}
