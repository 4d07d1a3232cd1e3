// xtensor interop (tapegrad/core/xtensor.hpp): the view shares the tensor's buffer both ways, follows
// its strides, and an expression is evaluated into a new tensor with the right values.
#include <catch2/catch.hpp>

#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>

#include "tapegrad/core/xtensor.hpp"

using namespace tg;

TEST_CASE("as_xtensor views the tensor's own buffer: reads and writes go through", "[xtensor]") {
    Tensor t = Tensor::from({2, 3}, {0, 1, 2, 3, 4, 5}, DType::f32);
    auto v = as_xtensor<float>(t);
    REQUIRE(v.shape().size() == 2);
    CHECK(v.shape()[0] == 2);
    CHECK(v.shape()[1] == 3);
    CHECK(v(1, 2) == 5.f);
    CHECK(&v(0, 0) == t.data<float>());  // the same memory, not a copy
    v(0, 1) = 42.f;
    CHECK(t.values()[1] == 42);
    t.data<float>()[4] = -1.f;
    CHECK(v(1, 1) == -1.f);
    // xtensor's own functions run on the view
    CHECK(xt::sum(v)() == Approx(0 + 42 + 2 + 3 - 1 + 5));
}

TEST_CASE("as_xtensor follows strides: a permuted tensor is viewed in place", "[xtensor]") {
    const Tensor t = Tensor::from({2, 3}, {0, 1, 2, 3, 4, 5}, DType::f64);
    const Tensor p = t.permute({1, 0});  // [3, 2], a strided view of the same storage
    auto v = as_xtensor<double>(p);
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 2; ++j) CHECK(v(i, j) == static_cast<double>(j * 3 + i));
    CHECK(&v(0, 0) == t.data<double>());
}

TEST_CASE("as_xtensor refuses a wrong element type and an undefined tensor, naming them", "[xtensor]") {
    Tensor t = Tensor::zeros({2}, DType::f32);
    CHECK_THROWS_WITH(as_xtensor<double>(t), Catch::Contains("dtype f32") && Catch::Contains("f64"));
    Tensor none;
    CHECK_THROWS_WITH(as_xtensor<float>(none), Catch::Contains("undefined"));
}

TEST_CASE("from_xtensor evaluates an expression into a new tensor of the matching dtype", "[xtensor]") {
    const xt::xarray<double> a = {{1., 2., 3.}, {4., 5., 6.}};
    const Tensor t = from_xtensor(a * 2. + 1.);
    CHECK(t.dtype() == DType::f64);
    CHECK(t.shape() == Shape{2, 3});
    CHECK(t.values() == std::vector<double>{3, 5, 7, 9, 11, 13});

    const Tensor r = from_xtensor(xt::arange<std::int32_t>(0, 4));
    CHECK(r.dtype() == DType::i32);
    CHECK(r.values() == std::vector<double>{0, 1, 2, 3});

    // round trip: a tensor's view back into a tensor copies the values, not the storage
    const Tensor back = from_xtensor(as_xtensor<double>(t));
    CHECK(back.values() == t.values());
    CHECK(back.storage_id() != t.storage_id());
}
