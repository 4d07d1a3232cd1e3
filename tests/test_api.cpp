// The everyday API: factories and the seeded generator, the one default dtype, printing,
// undefined tensors, grad() before backward, and error messages that name the op.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <thread>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/core/factories.hpp"

using namespace tg;
using Catch::Matchers::Contains;

namespace {

template <class T>
std::string str(const T& x) {
    std::ostringstream os;
    os << x;
    return os.str();
}

}  // namespace

TEST_CASE("factories: shapes, dtypes and values", "[api]") {
    const Tensor z = zeros({2, 3});
    CHECK(z.shape() == Shape{2, 3});
    CHECK(z.dtype() == DType::f32);
    CHECK(z.values() == std::vector<double>(6, 0.0));
    CHECK(zeros({4}, DType::f64).dtype() == DType::f64);

    const Tensor o = ones({3}, DType::i64);
    CHECK(o.dtype() == DType::i64);
    CHECK(o.values() == std::vector<double>{1, 1, 1});

    const Tensor f = full({2, 2}, 0.5);
    CHECK(f.dtype() == DType::f32);
    CHECK(f.values() == std::vector<double>(4, 0.5));

    // the static members still work and share the default
    CHECK(Tensor::zeros({1}).dtype() == DType::f32);
    CHECK(Tensor::full({1}, 2, DType::bf16).dtype() == DType::bf16);

    CHECK(randn({2, 3}).shape() == Shape{2, 3});
    CHECK(randn({2, 3}).dtype() == DType::f32);
    CHECK(randn({2, 3}, DType::f64).dtype() == DType::f64);
    CHECK(rand({5}, DType::f16).dtype() == DType::f16);
    CHECK(randn({0, 3}).numel() == 0);
    CHECK(randn({}).numel() == 1);
    CHECK_THROWS_WITH(randn({2}, DType::i32), Contains("randn: dtype i32 is not a float dtype"));
    CHECK_THROWS_WITH(rand({2, -1}), Contains("negative dimension -1"));
}

TEST_CASE("arange", "[api]") {
    CHECK(arange(0, 10, 2).values() == std::vector<double>{0, 2, 4, 6, 8});
    CHECK(arange(0, 10, 2).dtype() == DType::f32);
    CHECK(arange(5).values() == std::vector<double>{0, 1, 2, 3, 4});
    CHECK(arange(5, DType::i64).dtype() == DType::i64);
    CHECK(arange(1, 2, 0.25, DType::f64).values() == std::vector<double>{1, 1.25, 1.5, 1.75});
    CHECK(arange(3, 0, -1).values() == std::vector<double>{3, 2, 1});
    CHECK(arange(0, 1, 0.3, DType::f64).numel() == 4);  // 0, 0.3, 0.6, 0.9
    CHECK(arange(2, 2).numel() == 0);
    CHECK_THROWS_WITH(arange(0, 10, 0), Contains("arange: step=0"));
    CHECK_THROWS_WITH(arange(0, 10, -1), Contains("arange: step=-1 points away from end=10"));
}

TEST_CASE("random factories are reproducible from a seed", "[api][random]") {
    Generator a(42), b(42), c(43);
    const std::vector<double> va = randn({100}, DType::f64, a).values();
    CHECK(va == randn({100}, b, DType::f64).values());
    CHECK(va != randn({100}, DType::f64, c).values());
    // the sequence continues: a second draw differs from the first
    CHECK(va != randn({100}, DType::f64, a).values());
    a.manual_seed(42);
    CHECK(va == randn({100}, DType::f64, a).values());
    CHECK(a.initial_seed() == 42);

    // a copy continues the same sequence independently
    Generator d = a;
    CHECK(rand({10}, DType::f64, a).values() == rand({10}, DType::f64, d).values());

    // the global generator
    manual_seed(7);
    const std::vector<double> r1 = rand({50}).values();
    manual_seed(7);
    CHECK(rand({50}).values() == r1);
    CHECK(default_generator().initial_seed() == 7);
    // f32 values are the f64 ones rounded
    manual_seed(7);
    const std::vector<double> r64 = rand({50}, DType::f64).values();
    for (std::size_t i = 0; i < r1.size(); ++i) CHECK(r1[i] == static_cast<double>(static_cast<float>(r64[i])));
}

TEST_CASE("randn has mean 0 and std 1, rand is uniform below 1", "[api][random]") {
    Generator g(2024);
    const std::int64_t n = 100000;
    const std::vector<double> v = randn({n}, DType::f64, g).values();
    double s = 0, s2 = 0;
    for (double x : v) s += x, s2 += x * x;
    const double mean = s / n, var = s2 / n - mean * mean;
    // the standard errors are 1/sqrt(n) = 0.0032 for the mean and sqrt(2/n) = 0.0045 for the variance
    CHECK(std::fabs(mean) < 0.02);
    CHECK(std::fabs(std::sqrt(var) - 1) < 0.02);

    const std::vector<double> u = rand({n}, DType::f64, g).values();
    double su = 0, lo = 1, hi = 0;
    for (double x : u) su += x, lo = std::min(lo, x), hi = std::max(hi, x);
    CHECK(lo >= 0);
    CHECK(hi < 1);
    CHECK(std::fabs(su / n - 0.5) < 0.01);
}

TEST_CASE("the global generator can be used from two threads at once", "[api][random]") {
    manual_seed(1);
    std::vector<double> a, b;
    std::thread t1([&] {
        for (int i = 0; i < 200; ++i) a = randn({64}).values();
    });
    std::thread t2([&] {
        for (int i = 0; i < 200; ++i) b = rand({64}).values();
    });
    t1.join();
    t2.join();
    CHECK(a.size() == 64);
    CHECK(b.size() == 64);
}

TEST_CASE("one default dtype: f32", "[api]") {
    CHECK(kDefaultDType == DType::f32);
    CHECK(Tensor::from({2}, {1, 2}).dtype() == DType::f32);
    CHECK(Tensor::from({2}, {1, 2}, DType::f64).dtype() == DType::f64);
    CHECK(Tensor::empty({3}).dtype() == DType::f32);
}

TEST_CASE("printing tensors, shapes and variables", "[api][print]") {
    CHECK(str(Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6})) ==
          "tensor([[1., 2., 3.],\n"
          "        [4., 5., 6.]], shape=[2, 3], dtype=f32)");
    CHECK(str(Tensor::from({3}, {0.5, -1.25, 10}, DType::f64)) ==
          "tensor([ 0.5000, -1.2500, 10.0000], shape=[3], dtype=f64)");
    CHECK(str(Tensor::from({2}, {1e-6, 1}, DType::f64)) == "tensor([1.0000e-06, 1.0000e+00], shape=[2], dtype=f64)");
    CHECK(str(Tensor::from({2}, {3, -12}, DType::i64)) == "tensor([  3, -12], shape=[2], dtype=i64)");
    CHECK(str(Tensor::from({}, {2.5})) == "tensor(2.5000, shape=[], dtype=f32)");
    CHECK(str(zeros({0, 3})) == "tensor([], shape=[0, 3], dtype=f32)");
    CHECK(str(Tensor()) == "tensor(undefined)");
    CHECK(str(arange(8).reshape({2, 2, 2})) ==
          "tensor([[[0., 1.],\n"
          "         [2., 3.]],\n"
          "\n"
          "        [[4., 5.],\n"
          "         [6., 7.]]], shape=[2, 2, 2], dtype=f32)");
    // a strided view prints its own elements
    CHECK(str(arange(6).reshape({2, 3}).permute({1, 0})) ==
          "tensor([[0., 3.],\n"
          "        [1., 4.],\n"
          "        [2., 5.]], shape=[3, 2], dtype=f32)");
    CHECK(str(Tensor::from({2}, {NAN, -INFINITY})) == "tensor([ nan, -inf], shape=[2], dtype=f32)");

    // more than 1000 elements: the first and last three of each axis
    CHECK(str(arange(2000, DType::i32)) == "tensor([   0,    1,    2, ..., 1997, 1998, 1999], shape=[2000], dtype=i32)");
    CHECK(str(arange(1200, DType::i32).reshape({40, 30})) ==
          "tensor([[   0,    1,    2, ...,   27,   28,   29],\n"
          "        [  30,   31,   32, ...,   57,   58,   59],\n"
          "        [  60,   61,   62, ...,   87,   88,   89],\n"
          "        ...,\n"
          "        [1110, 1111, 1112, ..., 1137, 1138, 1139],\n"
          "        [1140, 1141, 1142, ..., 1167, 1168, 1169],\n"
          "        [1170, 1171, 1172, ..., 1197, 1198, 1199]], shape=[40, 30], dtype=i32)");
    CHECK(to_string(ones({1})) == "tensor([1.], shape=[1], dtype=f32)");

    // Shape: tg::operator<< (found here through `using namespace tg`)
    CHECK(str(Shape{2, 3}) == "[2, 3]");
    CHECK(str(Shape{}) == "[]");
    // Catch2 still prints vectors its own way
    CHECK(Catch::Detail::stringify(Shape{2, 3}) == "{ 2, 3 }");

    // Variable
    ag::Variable w = ag::param(Tensor::from({2}, {1, 2}), "w");
    CHECK(str(w) == "variable(tensor([1., 2.], shape=[2], dtype=f32), requires_grad=true, name='w')");
    ag::Variable y = ag::sum(w * w);
    CHECK(str(y) == "variable(tensor(5., shape=[], dtype=f32), requires_grad=true, op='sum')");
    y.backward();
    CHECK_THAT(str(w), Contains("grad=true"));
    CHECK(str(ag::constant(Tensor::from({1}, {3}, DType::i64))) ==
          "variable(tensor([3], shape=[1], dtype=i64), requires_grad=false)");
    CHECK(str(ag::Variable()) == "variable(undefined)");
}

TEST_CASE("every accessor of an undefined tensor says it is undefined", "[api][undefined]") {
    const Tensor t;
    Tensor m;
    CHECK_FALSE(t.defined());
    const auto undefined = [](const std::string& what) {
        return Contains("Tensor::" + what + ": the tensor is undefined");
    };
    CHECK_THROWS_WITH(t.numel(), undefined("numel"));
    CHECK_THROWS_WITH(t.dim(0), undefined("dim"));
    CHECK_THROWS_WITH(t.ndim(), undefined("ndim"));
    CHECK_THROWS_WITH(t.shape(), undefined("shape"));
    CHECK_THROWS_WITH(t.strides(), undefined("strides"));
    CHECK_THROWS_WITH(t.dtype(), undefined("dtype"));
    CHECK_THROWS_WITH(t.is_contiguous(), undefined("is_contiguous"));
    CHECK_THROWS_WITH(t.values(), undefined("values"));
    CHECK_THROWS_WITH(t.item(), undefined("item"));
    CHECK_THROWS_WITH(t.data<float>(), undefined("data"));
    CHECK_THROWS_WITH(t.raw_data(), undefined("raw_data"));
    CHECK_THROWS_WITH(t.to(DType::f64), undefined("to"));
    CHECK_THROWS_WITH(t.contiguous(), undefined("contiguous"));
    CHECK_THROWS_WITH(t.clone(), undefined("clone"));
    CHECK_THROWS_WITH(t.reshape({1}), undefined("reshape"));
    CHECK_THROWS_WITH(t.permute({}), undefined("permute"));
    CHECK_THROWS_WITH(t.slice(0, 0, 1), undefined("slice"));
    CHECK_THROWS_WITH(m.bump_version(), undefined("bump_version"));
    try {
        (void)t.numel();
    } catch (const Error& e) {
        CHECK(e.key() == "tensor");
    }
    // still fine: asking, and the version of nothing
    CHECK(t.version() == 0);
    CHECK(t.storage_id() == nullptr);
}

TEST_CASE("grad() before backward says so; has_grad() asks", "[api][autograd]") {
    ag::Variable w = ag::param(Tensor::from({2}, {1, 2}, DType::f64), "w");
    CHECK_FALSE(w.has_grad());
    CHECK_THROWS_WITH(w.grad(), Contains("'w'") && Contains("has no gradient yet: call backward() first"));
    CHECK_THROWS_WITH(w.grad_variable(), Contains("has no gradient yet"));
    ag::Variable anon = ag::param(Tensor::from({2}, {1, 2}));
    CHECK_THROWS_WITH(anon.grad(), Catch::StartsWith("this variable (shape [2]) has no gradient yet: call backward() first"));
    ag::Variable c = ag::constant(Tensor::from({1}, {1}), "c");
    CHECK_THROWS_WITH(c.grad(), Contains("'c'") && Contains("does not require one"));

    ag::Variable y = ag::mul(w, w);
    ag::sum(y).backward();
    REQUIRE(w.has_grad());
    CHECK(w.grad().values() == std::vector<double>{2, 4});
    CHECK_THROWS_WITH(y.grad(), Contains("result of 'mul'") && Contains("leaves only"));
    w.zero_grad();
    CHECK_FALSE(w.has_grad());
    CHECK_THROWS_WITH(w.grad(), Contains("has no gradient yet"));
    try {
        (void)w.grad();
    } catch (const Error& e) {
        CHECK(e.key() == "grad");
    }
}

TEST_CASE("errors start with the op's name and show shapes and values", "[api][errors]") {
    const auto key_of = [](auto&& f) -> std::string {
        try {
            f();
        } catch (const Error& e) {
            return e.key();
        }
        return "no error";
    };
    // element-wise ops name the autograd op, not "unary op"
    const ag::Variable ints = ag::constant(Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6}, DType::i64));
    CHECK_THROWS_WITH(ag::relu(ints), Catch::StartsWith("relu: needs a float tensor, got i64 [2, 3]"));
    CHECK_THROWS_WITH(ag::tanh(ints), Catch::StartsWith("tanh: "));
    CHECK(key_of([&] { ag::relu(ints); }) == "dtype");
    const ag::Variable x = ag::constant(zeros({2, 3})), y = ag::constant(zeros({4}));
    CHECK_THROWS_WITH(ag::add(x, y), Catch::StartsWith("add: shapes [2, 3] and [4] do not broadcast"));
    CHECK_THROWS_WITH(ag::mul(x, ints), Catch::StartsWith("mul: needs a float tensor, got i64 [2, 3] as operand b"));
    CHECK_THROWS_WITH(ag::sum(x, {2}), Catch::StartsWith("sum: axis 2 out of range for a tensor of rank 2 (valid: -2..1)"));
    CHECK_THROWS_WITH(ag::mean(x, {-3}), Catch::StartsWith("mean: axis -3"));
    CHECK_THROWS_WITH(ag::reshape(x, {4, 2}), Catch::StartsWith("reshape: cannot view [2, 3] (6 elements) as [4, 2]"));
    CHECK_THROWS_WITH(ag::permute(x, {0, 0}), Catch::StartsWith("permute: axes [0, 0] is not a permutation of 0..1 (tensor [2, 3])"));
    CHECK_THROWS_WITH(ag::slice(x, 1, 0, 4), Catch::StartsWith("slice: range [0, 4) out of bounds for axis 1 of size 3 (tensor [2, 3])"));
    CHECK_THROWS_WITH(zeros({2, 3}).dim(2), Catch::StartsWith("Tensor::dim: axis 2 out of range for shape [2, 3]"));
    CHECK_THROWS_WITH(ag::cat({x, ag::Variable()}, 0), Catch::StartsWith("cat: part 1 of 2 is undefined"));
    CHECK_THROWS_WITH(ag::Variable().value(), Catch::StartsWith("Variable::value: the variable is undefined"));
    CHECK_THROWS_WITH(Tensor::from({2, 3}, {1, 2}), Catch::StartsWith("Tensor::from: 2 values for shape [2, 3] (6 elements)"));

    // the conv geometry names the op, the offending value and the input shape
    ConvParams p{.N = 2, .C_in = 8, .C_out = 6, .groups = 3, .in_size = {5, 5}, .kernel = {3, 3}};
    CHECK_THROWS_WITH(ConvGeometry::transposed(p),
                      Catch::Equals("conv_transpose: groups=3 does not divide C_in=8 (input [2, 8, 5, 5])"));
    CHECK(key_of([&] { ConvGeometry::transposed(p); }) == "C_in");
    p.groups = 1;
    p.layout = Layout::NXC;
    p.stride = {1, 0};
    CHECK_THROWS_WITH(ConvGeometry::forward(p), Catch::StartsWith("conv: stride[1]=0 must be >= 1"));
    ConvGeometry g = ConvGeometry::forward({.N = 1, .C_in = 2, .C_out = 2, .in_size = {4}, .kernel = {3}});
    g.dilation = {0};
    CHECK_THROWS_WITH(g.validate("conv"), Catch::StartsWith("conv: dilation[0]=0 must be >= 1 (dilation [0])"));
    CHECK(key_of([&] { g.validate("conv"); }) == "geometry");
}

TEST_CASE("GeneratorScope: a thread's layers and factories draw from its own generator", "[api][random]") {
    Generator a(7), b(7);
    Tensor first, second;
    {
        GeneratorScope scope(a);
        first = randn({4});
        manual_seed(123);  // reseeds `a`, the scoped generator, not the global one
        second = randn({4});
    }
    b.manual_seed(123);
    CHECK(second.values() == randn({4}, b).values());
    Generator c(7);
    CHECK(first.values() == randn({4}, c).values());
}

TEST_CASE("Zero-size shapes with huge dimensions are refused instead of overflowing strides", "[api]") {
    const std::int64_t big = std::int64_t{1} << 32;
    CHECK_THROWS_WITH(Tensor::empty({0, big, big}, DType::f32), Catch::Contains("too large"));
    CHECK_THROWS_WITH(shape_numel({0, big, big}), Catch::Contains("[0, 4294967296, 4294967296]"));
    CHECK(Tensor::empty({0, big}, DType::f32).numel() == 0);  // fits: fine
}
