// Reductions, indexing and views of the everyday tensor API (tapegrad/ops/reduce.hpp, tapegrad/ops/index.hpp,
// tapegrad/core/tensor.hpp) and their differentiable counterparts (tapegrad/autograd/reductions.hpp,
// tapegrad/autograd/indexing.hpp): hand-computed values, PyTorch 1.13 goldens (tests/golden/tensor_index,
// written by gen.py there), f64 gradcheck and gradgradcheck, and every bad input's error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <functional>
#include <random>
#include <string>

#include "isas.hpp"
#include "tensor_helpers.hpp"
#include "tapegrad/autograd/catch_matchers.hpp"
#include "tapegrad/tapegrad.hpp"

using namespace tg;
using testing::check_close;
using testing::golden;
using testing::vals;

namespace {

// The value and the input gradient (for the golden upstream gradient) of f at `input`.
void check_golden(const std::string& name, const std::string& input, const std::function<ag::Variable(const ag::Variable&)>& f) {
    const ag::Variable x = ag::param(golden("tensor_index", input));
    const ag::Variable y = f(x);
    check_close(y.value(), golden("tensor_index", name), 1e-12, name + " value");
    ag::backward({y}, {golden("tensor_index", "gy_" + name)});
    check_close(x.grad(), golden("tensor_index", name + ".dx"), 1e-12, name + " gradient");
}

}  // namespace

TEST_CASE("reductions by hand: sum, mean, prod, var, std, logsumexp, max, min, keepdim", "[tensor-index][reduce]") {
    const Tensor a = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    CHECK(vals(sum(a)) == std::vector<double>{21});
    CHECK(sum(a).ndim() == 0);
    CHECK(vals(sum(a, {0})) == std::vector<double>{5, 7, 9});
    CHECK(sum(a, {1}, true).shape() == Shape{2, 1});
    CHECK(vals(sum(a, {-1})) == std::vector<double>{6, 15});
    CHECK(vals(mean(a, {1})) == std::vector<double>{2, 5});
    CHECK(vals(prod(a, {1})) == std::vector<double>{6, 120});
    CHECK(vals(var(a, {1})) == std::vector<double>{1, 1});                   // ((1-2)² + 0 + (3-2)²) / (3 - 1)
    CHECK(vals(var(a, {1}, 0)) == std::vector<double>{2.0f / 3, 2.0f / 3});  // population: / 3 (f32)
    CHECK(tg::std(a, {0}).values()[0] == Approx(std::sqrt(4.5)));
    CHECK(logsumexp(a, {1}).values()[0] == Approx(3 + std::log(std::exp(-2.) + std::exp(-1.) + 1)));
    const ValuesIndices m = max(a, 1);
    CHECK(vals(m.values) == std::vector<double>{3, 6});
    CHECK(vals(m.indices) == std::vector<double>{2, 2});
    CHECK(m.indices.dtype() == DType::i64);
    CHECK(vals(min(a, 0, true).values) == std::vector<double>{1, 2, 3});
    CHECK(vals(argmin(a, 1)) == std::vector<double>{0, 0});
    CHECK(max(a).item() == 6);
    CHECK(min(a).item() == 1);
    // integers: sum and prod give i64, max keeps the dtype
    const Tensor i = Tensor::from({3}, {2, -3, 4}, DType::i32);
    CHECK(sum(i).dtype() == DType::i64);
    CHECK(sum(i).item() == 3);
    CHECK(prod(i).item() == -24);
    CHECK(max(i, 0).values.dtype() == DType::i32);
    CHECK(sum(Tensor::zeros({0, 3}), {0}).values() == std::vector<double>{0, 0, 0});  // empty sums are 0
}

TEST_CASE("max, min and argmax: the first index wins a tie, NaN wins over numbers", "[tensor-index][reduce][golden]") {
    const Tensor t = golden("tensor_index", "t");  // [[1, 3, 3, -2, 0.5], [2, nan, 7, nan, -1]]
    const ValuesIndices m = max(t, 1);
    CHECK(m.values.values()[0] == 3);
    CHECK(std::isnan(m.values.values()[1]));
    CHECK(vals(m.indices) == vals(golden("tensor_index", "t_max1.idx")));  // [1, 1]: the first 3, the first NaN
    CHECK(vals(min(t, 1).indices) == vals(golden("tensor_index", "t_min1.idx")));  // [3, 1]: the NaN beats -1
    CHECK(vals(argmax(t, 0)) == vals(golden("tensor_index", "t_argmax0")));
    CHECK(std::isnan(max(t).item()));
}

TEST_CASE("reductions and their gradients match PyTorch", "[tensor-index][reduce][golden]") {
    check_golden("sum_1", "x", [](const ag::Variable& v) { return ag::sum(v, {1}); });
    check_golden("sum_02k", "x", [](const ag::Variable& v) { return ag::sum(v, {0, 2}, true); });
    check_golden("mean_m1", "x", [](const ag::Variable& v) { return ag::mean(v, {-1}); });
    check_golden("prod_1", "p", [](const ag::Variable& v) { return ag::prod(v, {1}); });
    check_golden("prod_z", "z", [](const ag::Variable& v) { return ag::prod(v, {1}); });  // zeros: exact products of the others
    check_golden("var_1", "x", [](const ag::Variable& v) { return ag::var(v, {1}); });
    check_golden("var_12_pop", "x", [](const ag::Variable& v) { return ag::var(v, {1, 2}, 0); });
    check_golden("std_2", "x", [](const ag::Variable& v) { return ag::std(v, {2}); });
    check_golden("std_all_pop", "x", [](const ag::Variable& v) { return ag::std(v, {}, 0); });
    check_golden("lse_1", "x", [](const ag::Variable& v) { return ag::logsumexp(v, {1}); });
    check_golden("lse_02", "x", [](const ag::Variable& v) { return ag::logsumexp(v, {0, 2}); });
    check_golden("max_1", "x", [](const ag::Variable& v) { return ag::max(v, 1).values; });
    check_golden("min_2k", "x", [](const ag::Variable& v) { return ag::min(v, 2, true).values; });
    CHECK(vals(max(golden("tensor_index", "x"), 1).indices) == vals(golden("tensor_index", "max_1.idx")));
    CHECK(vals(min(golden("tensor_index", "x"), 2, true).indices) == vals(golden("tensor_index", "min_2k.idx")));
}

TEST_CASE("index_select, gather, scatter_add and index_add match PyTorch, gradients too", "[tensor-index][golden]") {
    const Tensor idx = golden("tensor_index", "idx"), gidx = golden("tensor_index", "gidx");
    check_golden("index_select_1", "x", [&](const ag::Variable& v) { return ag::index_select(v, 1, idx); });
    check_golden("gather_1", "x", [&](const ag::Variable& v) { return ag::gather(v, 1, gidx); });
    check_golden("scatter_add_1", "x", [&](const ag::Variable& v) {
        return ag::scatter_add(ag::constant(Tensor::zeros({3, 4, 5}, DType::f64)), 1, gidx, ag::slice(v, 1, 0, 2));
    });
    // index_add by hand: repeated indices add up
    const Tensor base = Tensor::zeros({3, 2});
    const Tensor src = Tensor::from({2, 2}, {1, 2, 3, 4});
    CHECK(vals(index_add(base, 0, Tensor::from({2}, {2, 2}, DType::i64), src)) == std::vector<double>{0, 0, 0, 0, 4, 6});
    CHECK(vals(index_select(Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6}), 1, Tensor::from({2}, {2, 0}, DType::i32))) ==
          std::vector<double>{3, 1, 6, 4});
}

TEST_CASE("gradcheck and gradgradcheck in f64 for every differentiable reduction and index op", "[tensor-index][gradcheck]") {
    Generator gen(7);
    const Tensor x = randn({3, 4}, DType::f64, gen);
    const Tensor pos = add(rand({3, 4}, DType::f64, gen), 0.5);
    const Tensor idx = Tensor::from({3}, {2, 0, 2}, DType::i64);
    const Tensor gidx = Tensor::from({2, 4}, {0, 2, 1, 2, 2, 0, 0, 1}, DType::i64);
    using F = std::function<ag::Variable(const ag::Variable&)>;
    const std::vector<std::pair<std::string, F>> ops{
        {"prod", [](const ag::Variable& v) { return ag::prod(v, {1}); }},
        {"var", [](const ag::Variable& v) { return ag::var(v, {0}); }},
        {"std", [](const ag::Variable& v) { return ag::std(v, {1}, 0); }},
        {"logsumexp", [](const ag::Variable& v) { return ag::logsumexp(v, {1}, true); }},
        {"max", [](const ag::Variable& v) { return ag::max(v, 1).values; }},
        {"min all", [](const ag::Variable& v) { return ag::min(v); }},
        {"index_select", [&](const ag::Variable& v) { return ag::index_select(v, 1, idx); }},
        {"gather", [&](const ag::Variable& v) { return ag::gather(v, 0, gidx); }},
        {"scatter_add", [&](const ag::Variable& v) {
             return ag::scatter_add(ag::mul(v, v), 0, gidx, ag::slice(v, 0, 0, 2));
         }},
        {"index_add", [&](const ag::Variable& v) { return ag::index_add(v, 1, idx, ag::index_select(ag::mul(v, v), 1, idx)); }},
        {"select, transpose, stack", [](const ag::Variable& v) {
             return ag::flatten(ag::mul(ag::stack({ag::select(v, 0, -1), ag::select(ag::transpose(v, 0, 1), 1, 0)}, 1),
                                        ag::unsqueeze(ag::squeeze(ag::slice(v, 0, 0, 1)), 1)));
         }},
    };
    for (const auto& [name, f_] : ops) {
        INFO(name);
        const F f = f_;  // a variable clang 14 (the fuzz preset's) can capture; a binding it cannot
        const ag::Function fn = [f](const std::vector<ag::Variable>& v) { return f(v[0]); };
        const Tensor in = name == "prod" || name == "logsumexp" ? pos : x;
        CHECK_THAT(fn, test::PassesGradcheck({in}));
        CHECK_THAT(fn, test::PassesGradgradcheck({in}));
    }
}

TEST_CASE("views share storage; which calls copy", "[tensor-index][views]") {
    Tensor a = arange(24, DType::f32).reshape({2, 3, 4});
    Tensor row = a[1];  // a view of one slice
    CHECK(row.shape() == Shape{3, 4});
    CHECK(row.storage_id() == a.storage_id());
    row.set({0, 0}, 100);
    CHECK(a.at({1, 0, 0}) == 100);  // writes through the view
    CHECK(a.at({-1, -1, -1}) == 23);
    const Tensor t = a.transpose(0, 2);
    CHECK(t.shape() == Shape{4, 3, 2});
    CHECK(t.storage_id() == a.storage_id());
    CHECK(t.at({3, 2, 1}) == 23);
    CHECK(a.unsqueeze(1).shape() == Shape{2, 1, 3, 4});
    CHECK(a.unsqueeze(-1).shape() == Shape{2, 3, 4, 1});
    CHECK(a.unsqueeze(1).squeeze(1).shape() == a.shape());
    CHECK(Tensor::zeros({1, 3, 1}).squeeze().shape() == Shape{3});
    CHECK(a.flatten(1).shape() == Shape{2, 12});
    CHECK(a.flatten().shape() == Shape{24});
    CHECK(a.view({6, -1}).shape() == Shape{6, 4});
    CHECK(a.view({6, -1}).storage_id() == a.storage_id());
    CHECK(a.permute({1, 0, 2}).view({3, 2, 2, 2}).storage_id() == a.storage_id());  // split an axis: strides allow it
    CHECK_THROWS_WITH(t.view({24}), Catch::Contains("view: a tensor of shape [4, 3, 2] with strides [1, 4, 12] cannot be viewed as [24]"));
    const Tensor c = t.reshape({24});  // reshape copies where view cannot
    CHECK(c.storage_id() != a.storage_id());
    CHECK(c.values()[1] == 100);  // t[0, 0, 1] = a[1, 0, 0], written through the view above
    CHECK(c.values()[2] == 4);    // t[0, 1, 0] = a[0, 1, 0]
    // cat and stack copy
    const Tensor s = stack({a[0], a[1]}, 0);
    CHECK(s.shape() == Shape{2, 3, 4});
    CHECK(s.values() == a.values());
    CHECK(stack({a[0], a[1]}, -1).shape() == Shape{3, 4, 2});
    CHECK(cat({a, a}, 2).shape() == Shape{2, 3, 8});
    CHECK(Tensor::zeros({6}).slice(0, 0, 5, INT64_MAX).shape() == Shape{1});  // any step, no overflow
}

TEST_CASE("bad inputs of reductions, indexing and views name the function and the argument", "[tensor-index][errors]") {
    const Tensor a = Tensor::zeros({2, 3});
    const Tensor i = Tensor::from({2}, {0, 5}, DType::i64);
    CHECK_THROWS_WITH(sum(a, {2}), Catch::Contains("sum: axis 2 out of range for a tensor of rank 2"));
    CHECK_THROWS_WITH(mean(a, {0, 0}), Catch::Contains("mean: axis 0 given twice"));
    CHECK_THROWS_WITH(max(a, -3), Catch::Contains("max: axis -3 out of range"));
    CHECK_THROWS_WITH(max(Tensor::zeros({2, 0}), 1), Catch::Contains("max: axis 1 of [2, 0] is empty"));
    CHECK_THROWS_WITH(mean(Tensor::zeros({2}, DType::i64)), Catch::Contains("mean: needs a float tensor, got i64"));
    CHECK_THROWS_WITH(var(a, {}, -1), Catch::Contains("var: correction -1 must be >= 0"));
    CHECK_THROWS_WITH(index_select(a, 1, i), Catch::Contains("index_select: index value 5 at position [1] is out of range (valid: 0..2)"));
    CHECK_THROWS_WITH(index_select(a, 1, Tensor::from({1}, {-1}, DType::i64)), Catch::Contains("index value -1"));
    CHECK_THROWS_WITH(index_select(a, 1, Tensor::from({1}, {0})), Catch::Contains("index_select: the index must be an i32 or i64 tensor, got f32"));
    CHECK_THROWS_WITH(gather(a, 0, Tensor::zeros({2}, DType::i64)), Catch::Contains("gather: the index [2] must have the input's rank 2"));
    CHECK_THROWS_WITH(gather(a, 0, Tensor::zeros({2, 4}, DType::i64)), Catch::Contains("larger than the input [2, 3] on axis 1"));
    CHECK_THROWS_WITH(scatter_add(a, 0, Tensor::zeros({2, 3}, DType::i64), Tensor::zeros({1, 3})),
                      Catch::Contains("scatter_add: the index [2, 3] is larger than the source [1, 3] on axis 0"));
    CHECK_THROWS_WITH(index_add(a, 0, Tensor::zeros({2}, DType::i64), Tensor::zeros({3, 3})),
                      Catch::Contains("index_add: the source [3, 3] must have shape [2, 3]"));
    CHECK_THROWS_WITH(stack({a, Tensor::zeros({3, 2})}, 0), Catch::Contains("stack: part 1 has shape [3, 2], part 0 has [2, 3]"));
    CHECK_THROWS_WITH(a[2], Catch::Contains("select: index 2 out of range for axis 0 of size 2 (valid: -2..1"));
    CHECK_THROWS_WITH(a.at({0, 3}), Catch::Contains("Tensor::at: index [0, 3] is out of range on axis 1"));
    CHECK_THROWS_WITH(a.at({0}), Catch::Contains("Tensor::at: index [0] has 1 entries for a tensor of shape [2, 3]"));
    CHECK_THROWS_WITH(a.transpose(0, 2), Catch::Contains("transpose: axis 2 out of range"));
    CHECK_THROWS_WITH(a.unsqueeze(3), Catch::Contains("unsqueeze: axis 3 out of range for a tensor of rank 3"));
    CHECK_THROWS_WITH(a.flatten(1, 0), Catch::Contains("flatten: start axis 1 comes after end axis 0"));
    CHECK_THROWS_WITH(a.reshape({4, -1}), Catch::Contains("reshape: cannot infer the -1 of [4, -1] for [2, 3]"));
    CHECK_THROWS_WITH(a.view({-1, -1}), Catch::Contains("view: shape [-1, -1] has a negative dim other than one -1"));
    const ag::Variable v = ag::param(Tensor::zeros({2, 3}, DType::f64));
    CHECK_THROWS_WITH(ag::scatter_add(v, 0, Tensor::zeros({1, 3}, DType::i64), v),
                      Catch::Contains("scatter_add: the index [1, 3] must have the source's shape [2, 3]"));
}

TEST_CASE("batched matmul broadcasts its leading dims and matches PyTorch, gradients too", "[tensor-index][matmul][golden]") {
    const ag::Variable a = ag::param(golden("tensor_index", "bmm_a")), b = ag::param(golden("tensor_index", "bmm_b"));
    const ag::Variable y = ag::matmul(a, b);
    CHECK(y.shape() == Shape{2, 3, 3, 2});
    check_close(y.value(), golden("tensor_index", "bmm_y"), 1e-12, "value");
    ag::backward({y}, {golden("tensor_index", "bmm_gy")});
    check_close(a.grad(), golden("tensor_index", "bmm_da"), 1e-12, "gradient of a (summed over the broadcast batch dim)");
    check_close(b.grad(), golden("tensor_index", "bmm_db"), 1e-12, "gradient of b");
    const ag::Function f = [](const std::vector<ag::Variable>& v) { return ag::matmul(v[0], ag::mul(v[1], v[1])); };
    const std::vector<Tensor> in{randn({2, 2, 3}, DType::f64), randn({3, 2}, DType::f64)};
    CHECK_THAT(f, test::PassesGradcheck(in));
    CHECK_THAT(f, test::PassesGradgradcheck(in));
    CHECK_THROWS_WITH(matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 3, 4})),
                      Catch::Contains("matmul: shapes [2, 3, 4] and [2, 3, 4] are not [..., M, K] and [..., K, N]"));
    CHECK_THROWS_WITH(matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({3, 4, 5})), Catch::Contains("do not broadcast"));
}

TEST_CASE("contiguous() of permuted, sliced and transposed views equals reading element by element", "[tensor-index][views]") {
    // Odd sizes (tiles of 8 with remainders), every element size (1, 2, 4, 8 bytes), several
    // layouts: an innermost stride 1 (rows), a stride-1 axis elsewhere (tiled), none (gather).
    for (DType dt : {DType::b8, DType::f16, DType::f32, DType::i64}) {
        INFO(dtype_name(dt));
        const Tensor base = arange(3 * 19 * 11 * 5, DType::f64).reshape({3, 19, 11, 5}).to(dt == DType::b8 ? DType::f64 : dt);
        const Tensor t = dt == DType::b8 ? gt(base, 800.0) : base;
        const std::vector<Tensor> views{t.permute({3, 1, 2, 0}), t.transpose(1, 3), t.permute({2, 0, 3, 1}).slice(1, 1, 3),
                                        t.slice(1, 2, 19, 3).transpose(0, 2), t.permute({0, 2, 1, 3}), t.select(3, 2).transpose(0, 1)};
        for (const Tensor& v : views) {
            const Tensor c = v.contiguous();
            REQUIRE(c.is_contiguous());
            std::vector<double> want;
            for (std::int64_t k = 0; k < v.numel(); ++k) want.push_back(v.at(unravel_index(k, v.shape())));
            CHECK(c.values() == want);
        }
    }
}

TEST_CASE("contiguous() of transposed views moves every element bit for bit at every instruction set", "[tensor-index][views][simd]") {
    // A transpose's plane goes through transpose_copy: W × W blocks in registers (W = 16
    // floats or 8 doubles at AVX-512, 8 or 4 at AVX2; both block orders: more rows than
    // columns and fewer), edges as masked blocks where they are thick and element by element
    // where thin, 8 × 8 tiles for 2-byte elements and at Isa::scalar. Elements are moved,
    // never computed: random bit patterns (NaN payloads, signalling NaNs, -0 among them) must
    // come out as they went in. Each result element is compared with the view's own bytes.
    const tg::testing::IsaGuard guard;
    std::mt19937_64 rng(2026);
    for (simd::Isa isa : tg::testing::tested_isas()) {
        simd::force(isa);
        for (DType dt : {DType::f32, DType::i32, DType::f64, DType::i64, DType::f16})
            for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {3, 50}, {16, 16}, {17, 33}, {33, 17}, {21, 45},
                                      {45, 21}, {40, 3}, {64, 96}, {100, 7}, {2, 130}}) {
                const std::int64_t es = static_cast<std::int64_t>(dtype_size(dt));
                Tensor t = Tensor::empty({2, rows, cols}, dt);
                auto* bytes = static_cast<unsigned char*>(t.raw_data());
                for (std::int64_t b = 0; b < t.numel() * es; ++b) bytes[b] = static_cast<unsigned char>(rng());
                for (const Tensor& v : {t.select(0, 1).transpose(0, 1), t.permute({0, 2, 1}), t.permute({2, 0, 1})}) {
                    INFO(simd::isa_name(isa) << " " << dtype_name(dt) << " " << rows << " x " << cols << " view " << shape_str(v.shape()));
                    const Tensor c = v.contiguous();
                    REQUIRE(c.is_contiguous());
                    const auto* got = static_cast<const unsigned char*>(c.raw_data());
                    const auto* from = static_cast<const unsigned char*>(v.raw_data());
                    std::int64_t wrong = 0;
                    for (std::int64_t k = 0; k < v.numel(); ++k) {
                        const Shape idx = unravel_index(k, v.shape());
                        std::int64_t at = 0;
                        for (std::size_t a = 0; a < idx.size(); ++a) at += idx[a] * v.strides()[a];
                        wrong += std::memcmp(got + k * es, from + at * es, static_cast<std::size_t>(es)) != 0;
                    }
                    CHECK(wrong == 0);
                }
            }
    }
}

TEST_CASE("where, masked_fill, comparisons and index_select equal reading element by element, every element size", "[tensor-index][views]") {
    // Each op moves elements as integers of their width and runs the innermost axis as one
    // loop (broadcast operands: strides 0 there); the truth is at() on the operands.
    const Tensor base = arange(5 * 19, DType::f64).reshape({5, 19});
    const Tensor other = mul(arange(19, DType::f64), 3.0).reshape({1, 19});
    const Tensor mask = gt(Tensor::from({5, 19}, [] {
                               std::vector<double> v;
                               for (int k = 0; k < 95; ++k) v.push_back((k * 7919) % 13 < 6 ? 1.0 : 0.0);
                               return v;
                           }()),
                           0.5);
    const Tensor col_mask = gt(arange(5, DType::f64).reshape({5, 1}), 1.5);
    const Tensor idx = Tensor::from({4}, {3, 0, 3, 1}, DType::i64);
    for (DType dt : {DType::b8, DType::f16, DType::i32, DType::f32, DType::f64, DType::i64}) {
        INFO(dtype_name(dt));
        const Tensor a = dt == DType::b8 ? gt(base, 40.0) : base.to(dt);
        const Tensor b = dt == DType::b8 ? gt(other, 20.0) : other.to(dt);
        for (const Tensor& m : {mask, col_mask})
            for (const Tensor& bb : {b, broadcast_to(b, {5, 19})}) {
                const Tensor w = where(m, a, bb), f = masked_fill(a, m, 1.0), g = gt(a, bb);
                for (std::int64_t i = 0; i < 5; ++i)
                    for (std::int64_t j = 0; j < 19; ++j) {
                        const bool on = m.at({m.shape()[0] == 1 ? 0 : i, m.shape()[1] == 1 ? 0 : j}) != 0;
                        const double av = a.at({i, j}), bv = bb.at({bb.shape()[0] == 1 ? 0 : i, j});
                        CHECK(w.at({i, j}) == (on ? av : bv));
                        CHECK(f.at({i, j}) == (on ? 1.0 : av));
                        CHECK(g.at({i, j}) == (av > bv ? 1.0 : 0.0));
                    }
            }
        const Tensor r = index_select(a, 1, idx), c = index_select(a, 0, idx);
        for (std::int64_t i = 0; i < 5; ++i)
            for (std::int64_t k = 0; k < 4; ++k) CHECK(r.at({i, k}) == a.at({i, idx.data<std::int64_t>()[k]}));
        for (std::int64_t k = 0; k < 4; ++k)
            for (std::int64_t j = 0; j < 19; ++j) CHECK(c.at({k, j}) == a.at({idx.data<std::int64_t>()[k], j}));
    }
}

TEST_CASE("softmax and log_softmax along every axis equal the line-by-line formula in f64", "[tensor-index][softmax]") {
    // Lines along the last axis one at a time; along others, blocks of 256 positions side by
    // side (here 300 = 256 + 44 inner positions, and 1 × 300 lines): each element against
    // e^(x − max) / Σ e^(x − max) of its line, summed in line order, in f64 as the op computes.
    const Tensor x = mul(randn({4, 7, 300}, DType::f64), 6.0);
    for (int axis : {0, 1, 2})
        for (bool log : {false, true}) {
            INFO("axis " << axis << (log ? " log_softmax" : " softmax"));
            const Tensor y = log ? log_softmax(x, axis) : softmax(x, axis);
            const std::int64_t n = x.shape()[static_cast<std::size_t>(axis)];
            std::int64_t wrong = 0;
            for (std::int64_t k = 0; k < x.numel(); ++k) {
                Shape at = unravel_index(k, x.shape());
                double m = -INFINITY, sum = 0;
                Shape line = at;
                for (std::int64_t j = 0; j < n; ++j) {
                    line[static_cast<std::size_t>(axis)] = j;
                    m = std::max(m, x.at(line));
                }
                for (std::int64_t j = 0; j < n; ++j) {
                    line[static_cast<std::size_t>(axis)] = j;
                    sum += std::exp(x.at(line) - m);
                }
                const double want = log ? x.at(at) - m - std::log(sum) : std::exp(x.at(at) - m) / sum;
                wrong += y.at(at) != want;
            }
            CHECK(wrong == 0);
        }
}

TEST_CASE("matmul writes every element of its result, into reused storage too", "[tensor-index][matmul]") {
    // Freed storage of 64 KiB and more is reused, and matmul's result is not zeroed first
    // (the GEMM writes it with beta 0): fill a buffer of the result's size with NaN, free
    // it, then every element must come out of the sum (hand-computed: a·b with a = 1 and
    // small integers in b, so that every sum is exact in f32).
    for (DType dt : {DType::f32, DType::f64}) {
        for (const std::int64_t K : {std::int64_t{1}, std::int64_t{300}, std::int64_t{0}}) {
            const std::int64_t M = 517, N = 611;  // edges in every GEMM tile size
            { const Tensor junk = Tensor::full({M, N}, std::numeric_limits<double>::quiet_NaN(), dt); }
            std::vector<double> bv(static_cast<std::size_t>(K * N)), want(static_cast<std::size_t>(M * N), 0.0);
            for (std::int64_t k = 0; k < K; ++k)
                for (std::int64_t j = 0; j < N; ++j) {
                    bv[static_cast<std::size_t>(k * N + j)] = static_cast<double>((k + 2 * j) % 5);
                    want[static_cast<std::size_t>(j)] += static_cast<double>((k + 2 * j) % 5);
                }
            const Tensor a = Tensor::full({M, K}, 1.0, dt), b = Tensor::from({K, N}, bv, dt);
            INFO(dtype_name(dt) << " K = " << K);
            // The elements that differ from the sum (a count: Catch would print both vectors).
            auto wrong = [&](const std::vector<double>& got) {
                std::size_t n = got.size() == want.size() ? 0 : got.size() + want.size();
                for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) n += got[i] != want[i];
                return n;
            };
            for (std::int64_t i = 1; i < M; ++i)
                std::copy_n(want.begin(), N, want.begin() + i * N);
            CHECK(wrong(matmul(a, b).values()) == 0);
            // Batched: two [M, K] · [K, N] products.
            { const Tensor junk = Tensor::full({2, M, N}, std::numeric_limits<double>::quiet_NaN(), dt); }
            const Tensor cb = matmul(Tensor::full({2, M, K}, 1.0, dt), b);
            want.insert(want.end(), want.begin(), want.end());
            CHECK(wrong(cb.values()) == 0);
        }
    }
}
