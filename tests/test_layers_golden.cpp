// Pooling and batch norm against PyTorch: the goldens of tests/golden/layers/ (written by
// gen_layers.py there, float64), forward values and gradients, in f64 and f32.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/autograd/pool.hpp"
#include "tapegrad/core/npy.hpp"
#include "tapegrad/nn/layers.hpp"
#include "tensor_helpers.hpp"

using namespace tg;

namespace {

using testing::check_close;
using testing::golden;

double tol_of(DType dt) { return dt == DType::f64 ? 1e-12 : 1e-5; }

struct PoolGolden {
    std::string name;
    bool max;
    Shape kernel, stride, padding, dilation;
};

}  // namespace

TEST_CASE("max and average pooling match PyTorch, forward and backward", "[nn][layers][pool][golden]") {
    const std::vector<PoolGolden> cases{
        {"max1d", true, {3}, {2}, {1}, {2}},
        {"max2d", true, {3, 3}, {2}, {1}, {1}},
        {"max2d_default", true, {2, 2}, {}, {0}, {1}},
        {"max3d", true, {2, 3, 3}, {1, 2, 2}, {0, 1, 1}, {1}},
        {"avg1d", false, {4}, {3}, {2}, {1}},
        {"avg2d", false, {3, 3}, {2}, {1}, {1}},
        {"avg3d", false, {2, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1}},
    };
    for (const PoolGolden& c : cases)
        for (DType dt : {DType::f64, DType::f32}) {
            INFO(c.name << " " << dtype_name(dt));
            const ag::Variable x = ag::param(golden("layers", c.name + ".x").to(dt));
            nn::PoolOptions o(c.kernel);
            o.padding(c.padding).dilation(c.dilation);
            if (!c.stride.empty()) o.stride(c.stride);
            ag::Variable y = c.max ? nn::MaxPool(o)(x) : nn::AvgPool(o)(x);
            check_close(y.value(), golden("layers", c.name + ".y"), tol_of(dt), "y");
            y.backward(golden("layers", c.name + ".gy").to(dt));
            check_close(x.grad(), golden("layers", c.name + ".dx"), tol_of(dt), "dx");
        }
}

TEST_CASE("BatchNorm matches PyTorch: training forward and backward, running statistics, eval forward",
          "[nn][layers][batchnorm][golden]") {
    for (const std::string name : {"bn0d", "bn1d", "bn2d", "bn3d"})
        for (DType dt : {DType::f64, DType::f32}) {
            INFO(name << " " << dtype_name(dt));
            const Tensor x0 = golden("layers", name + ".x");
            const std::int64_t C = x0.shape()[1];
            nn::BatchNorm bn(C, 1e-5, 0.1, dt);
            bn.weight.assign(golden("layers", name + ".w"));
            bn.bias.assign(golden("layers", name + ".b"));
            const ag::Variable x = ag::param(x0.to(dt));
            ag::Variable y = bn(x);
            check_close(y.value(), golden("layers", name + ".y"), tol_of(dt), "y");
            y.backward(golden("layers", name + ".gy").to(dt));
            check_close(x.grad(), golden("layers", name + ".dx"), tol_of(dt), "dx");
            check_close(bn.weight.grad(), golden("layers", name + ".dw"), tol_of(dt), "dw");
            check_close(bn.bias.grad(), golden("layers", name + ".db"), tol_of(dt), "db");
            check_close(bn.running_mean(), golden("layers", name + ".running_mean"), tol_of(dt), "running_mean");
            check_close(bn.running_var(), golden("layers", name + ".running_var"), tol_of(dt), "running_var");
            CHECK(bn.num_batches_tracked() == 1);
            bn.eval();
            check_close(bn(ag::constant(x0.to(dt))).value(), golden("layers", name + ".eval_y"), tol_of(dt), "eval y");
            CHECK(bn.num_batches_tracked() == 1);
        }
}
