// tapegrad::dist on every rank of the world: bucketed gradient averaging against the mean
// computed here from each rank's known gradients, broadcast against a locally rebuilt rank-0
// model, the differentiable all_reduce_sum by hand, and SyncBatchNorm on a split batch
// against nn::BatchNorm on the whole batch in one process.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/core/factories.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/dist/collectives.hpp"
#include "tapegrad/dist/context.hpp"
#include "tapegrad/dist/sync_batch_norm.hpp"
#include "tapegrad/nn/layers.hpp"

using namespace tg;

namespace {

struct World {
    int rank = 0, size = 1;
};
World world() {
    const dist::Context c;  // MPI runs already (main.cpp): only asks
    return {c.rank(), c.world_size()};
}

// The gradient rank r gives element j of parameter k: distinct per rank, parameter and
// element, and exact in f32, so the mean over two ranks is exact too.
double grad_value(int r, std::size_t k, std::int64_t j) {
    return (r + 1) * 0.5 + static_cast<double>(k) * 8 - static_cast<double>(j % 97) * 0.25 * (r % 2 == 0 ? 1 : -1);
}

}  // namespace

TEST_CASE("allreduce_gradients averages every gradient exactly, across bucket boundaries", "[dist]") {
    const World w = world();
    // f32 and f64 parameters of many sizes, interleaved; buckets from one element to more
    // than everything.
    const std::vector<std::pair<Shape, DType>> specs = {
        {{3}, DType::f32},     {{7, 5}, DType::f32}, {{1}, DType::f64},    {{300}, DType::f32},
        {{2, 3, 4}, DType::f64}, {{}, DType::f32},   {{1000}, DType::f32}, {{33}, DType::f64},
        {{5}, DType::f32}};
    for (const std::size_t bucket : {std::size_t{1}, std::size_t{4}, std::size_t{60}, std::size_t{1000},
                                     std::size_t{4096}, dist::kDefaultBucketBytes}) {
        CAPTURE(bucket);
        std::vector<ag::Variable> params;
        for (std::size_t k = 0; k < specs.size(); ++k) {
            const auto& [shape, dtype] = specs[k];
            std::string name = "p";
            name += std::to_string(k);
            params.push_back(ag::param(Tensor::zeros(shape, dtype), name));
            std::vector<double> g(static_cast<std::size_t>(shape_numel(shape)));
            for (std::size_t j = 0; j < g.size(); ++j) g[j] = grad_value(w.rank, k, static_cast<std::int64_t>(j));
            params.back().set_grad(Tensor::from(shape, g, dtype));
        }
        dist::allreduce_gradients(params, bucket);
        for (std::size_t k = 0; k < specs.size(); ++k) {
            CAPTURE(k);
            REQUIRE(params[k].has_grad());
            CHECK(params[k].grad().dtype() == specs[k].second);
            CHECK(params[k].grad().shape() == specs[k].first);
            const std::vector<double> got = params[k].grad().values();
            int wrong = 0;
            for (std::size_t j = 0; j < got.size(); ++j) {
                double sum = 0;
                for (int r = 0; r < w.size; ++r) sum += grad_value(r, k, static_cast<std::int64_t>(j));
                const double want = sum / w.size;
                // exact for a world of 1 or 2 (a power of two); one rounding otherwise
                const double tol = (w.size & (w.size - 1)) == 0 ? 0 : 1e-6 * std::abs(want);
                wrong += std::abs(got[j] - want) > tol;
            }
            CHECK(wrong == 0);
        }
    }
}

TEST_CASE("allreduce_gradients: a gradient missing on some rank counts as zero; missing everywhere stays missing",
          "[dist]") {
    const World w = world();
    ag::Variable only_root = ag::param(Tensor::zeros({4}), "only_root");
    ag::Variable nowhere = ag::param(Tensor::zeros({2}), "nowhere");
    ag::Variable frozen = ag::constant(Tensor::zeros({3}), "frozen");
    if (w.rank == 0) only_root.set_grad(Tensor::from({4}, {2, 4, 6, 8}));
    dist::allreduce_gradients({only_root, nowhere, frozen}, 8);
    REQUIRE(only_root.has_grad());
    const std::vector<double> g = only_root.grad().values();
    for (std::size_t j = 0; j < 4; ++j) CHECK(g[j] == 2.0 * static_cast<double>(j + 1) / w.size);
    CHECK_FALSE(nowhere.has_grad());
    CHECK_FALSE(frozen.has_grad());
}

TEST_CASE("allreduce_gradients rejects a zero bucket, f16 gradients and ranks that disagree", "[dist]") {
    const World w = world();
    ag::Variable p = ag::param(Tensor::zeros({2}));
    p.set_grad(ones({2}));
    CHECK_THROWS_WITH(dist::allreduce_gradients({p}, 0), Catch::Contains("bucket_bytes is 0"));
    ag::Variable h = ag::param(Tensor::zeros({2}, DType::f16), "half");
    h.set_grad(ones({2}, DType::f16));
    CHECK_THROWS_WITH(dist::allreduce_gradients({p, h}), Catch::Contains("'half') is f16"));
    if (w.size > 1) {
        std::vector<ag::Variable> ps(static_cast<std::size_t>(w.rank + 1), p);  // 1 on rank 0, 2 on rank 1, ...
        CHECK_THROWS_WITH(dist::allreduce_gradients(ps), Catch::Contains("the ranks differ in their number of parameters"));
    }
}

TEST_CASE("broadcast_parameters copies rank 0's parameters and buffers to every rank", "[dist]") {
    const World w = world();
    auto make = [](std::uint64_t seed) {
        manual_seed(seed);
        return nn::Sequential{nn::Linear(5, 4), nn::BatchNorm(4), nn::Linear(4, 3)};
    };
    nn::Sequential mine = make(100 + static_cast<std::uint64_t>(w.rank));
    {  // rank-dependent running statistics too
        ag::NoGradGuard no_grad;
        mine(ag::constant(Tensor::full({2 + w.rank, 5}, w.rank)));
    }
    nn::Sequential rank0 = make(100);  // what rank 0 holds, rebuilt here
    {
        ag::NoGradGuard no_grad;
        rank0(ag::constant(Tensor::full({2, 5}, 0)));
    }
    dist::broadcast_parameters(mine);
    const nn::StateDict a = mine.state_dict(), b = rank0.state_dict();
    REQUIRE(a.size() == b.size());
    for (const auto& [name, t] : a) {
        CAPTURE(name);
        CHECK(t.values() == b.at(name).values());
    }
    CHECK_THROWS_WITH(dist::broadcast_parameters(mine, w.size), Catch::Contains("root is"));
}

TEST_CASE("average is the mean over the ranks", "[dist]") {
    const World w = world();
    CHECK(dist::average(w.rank + 1.0) == (w.size + 1) / 2.0);
}

TEST_CASE("all_reduce_sum sums values, and its backward sums gradients, over the ranks", "[dist]") {
    const World w = world();
    const double r = w.rank, n = w.size;
    ag::Variable x = ag::param(Tensor::from({3}, {r, 2 * r, 1.0}, DType::f64));
    const ag::Variable y = dist::all_reduce_sum(x);
    // Σ_r r = n(n−1)/2
    const double s = n * (n - 1) / 2;
    CHECK(y.value().values() == std::vector<double>{s, 2 * s, n});
    // rank r's loss weights y by (r + 1): the gradient reaching x is Σ_r (r + 1) = n(n+1)/2.
    ag::sum(ag::scale(y, r + 1)).backward();
    const double g = n * (n + 1) / 2;
    CHECK(x.grad().values() == std::vector<double>{g, g, g});
}

TEST_CASE("SyncBatchNorm on a batch split over the ranks is nn::BatchNorm on the whole batch", "[dist]") {
    const World w = world();
    const std::int64_t per_rank = 3, C = 2, H = 2, N = per_rank * w.size;
    Generator gen(7);
    std::vector<double> all(static_cast<std::size_t>(N * C * H)), weights(all.size());
    gen.fill_uniform(all, -2, 3);
    gen.fill_uniform(weights, -1, 1);
    const Tensor x_all = Tensor::from({N, C, H}, all, DType::f64), w_all = Tensor::from({N, C, H}, weights, DType::f64);
    // This rank's rows r, r + size, ... (the DataLoader's split).
    auto rows = [&](const Tensor& t) { return t.slice(0, w.rank, N, w.size).contiguous(); };

    // One process, the whole batch: loss Σ y·weights.
    nn::BatchNorm whole(C, 1e-5, 0.1, DType::f64);
    ag::Variable xw = ag::param(x_all);
    const ag::Variable yw = whole(xw);
    ag::sum(ag::mul(yw, ag::constant(w_all))).backward();

    // Every rank, its rows: the sum of the ranks' losses is the whole batch's loss; the
    // parameter gradients are averaged, so size × average = the whole batch's.
    dist::SyncBatchNorm sync(C, 1e-5, 0.1, DType::f64);
    ag::Variable xs = ag::param(rows(x_all));
    const ag::Variable ys = sync(xs);
    ag::sum(ag::mul(ys, ag::constant(rows(w_all)))).backward();
    dist::allreduce_gradients(sync.parameters());

    auto close = [](const std::vector<double>& a, const std::vector<double>& b) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (std::abs(a[i] - b[i]) > 1e-12 * (1 + std::abs(b[i]))) return false;
        return true;
    };
    CHECK(close(ys.value().values(), rows(yw.value()).values()));
    CHECK(close(xs.grad().values(), rows(xw.grad()).values()));
    for (const char* p : {"weight", "bias"}) {
        CAPTURE(p);
        const Tensor gs = p[0] == 'w' ? sync.weight.grad() : sync.bias.grad();
        const Tensor gw = p[0] == 'w' ? whole.weight.grad() : whole.bias.grad();
        std::vector<double> scaled = gs.values();
        for (double& v : scaled) v *= w.size;
        CHECK(close(scaled, gw.values()));
    }
    CHECK(close(sync.running_mean().values(), whole.running_mean().values()));
    CHECK(close(sync.running_var().values(), whole.running_var().values()));
}
