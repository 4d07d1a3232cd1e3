// The data loader (data/loader.hpp): every index exactly once per epoch, the same order for
// the same (seed, epoch) and another for another epoch, the rank split disjoint, equal and
// complete, limit, batch shapes (last partial batch kept) and the rows and labels gathered.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>

#include "tapegrad/core/error.hpp"
#include "tapegrad/data/loader.hpp"

using namespace tg;

namespace {

// images [n, 2, 3] whose row i holds i + k/10 (k = 0..5), labels [n] = 1000 + i.
std::pair<Tensor, Tensor> dataset(std::int64_t n) {
    std::vector<double> v, l;
    for (std::int64_t i = 0; i < n; ++i) {
        for (int k = 0; k < 6; ++k) v.push_back(static_cast<double>(i) + k / 10.0);
        l.push_back(1000.0 + static_cast<double>(i));
    }
    return {Tensor::from({n, 2, 3}, v, DType::f32), Tensor::from({n}, l, DType::i64)};
}

std::vector<std::int64_t> sorted(std::vector<std::int64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
}

std::vector<std::int64_t> iota(std::int64_t n) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    std::iota(v.begin(), v.end(), 0);
    return v;
}

}  // namespace

TEST_CASE("Loader: each epoch visits every index exactly once, through its batches", "[loader]") {
    const auto [images, labels] = dataset(103);
    const DataLoader dl(images, labels, {.batch = 10, .seed = 42});
    REQUIRE(dl.size() == 103);
    REQUIRE(dl.batches() == 11);
    for (std::int64_t epoch = 0; epoch < 4; ++epoch) {
        std::vector<std::int64_t> seen;
        for (std::int64_t b = 0; b < dl.batches(); ++b) {
            const Batch batch = dl.batch(epoch, b);
            const std::int64_t B = b + 1 < dl.batches() ? 10 : 3;  // the last partial batch is kept
            CHECK(batch.images.shape() == Shape{B, 2, 3});
            CHECK(batch.images.dtype() == DType::f32);
            CHECK(batch.labels.shape() == Shape{B});
            CHECK(batch.labels.dtype() == DType::i64);
            REQUIRE(batch.indices.size() == static_cast<std::size_t>(B));
            const std::vector<double> iv = batch.images.values(), lv = batch.labels.values();
            for (std::size_t i = 0; i < batch.indices.size(); ++i) {
                const double row = static_cast<double>(batch.indices[i]);
                CHECK(iv[i * 6] == Approx(row));
                CHECK(iv[i * 6 + 5] == Approx(row + 0.5));
                CHECK(lv[i] == 1000.0 + row);
            }
            seen.insert(seen.end(), batch.indices.begin(), batch.indices.end());
        }
        CHECK(seen == dl.order(epoch));
        CHECK(sorted(seen) == iota(103));
    }
}

TEST_CASE("Loader: the order is a function of (seed, epoch) alone", "[loader]") {
    const auto [images, labels] = dataset(500);
    const DataLoader a(images, labels, {.batch = 7, .seed = 3}), b(images, labels, {.batch = 7, .seed = 3});
    const DataLoader c(images, labels, {.batch = 7, .seed = 4});
    CHECK(a.order(5) == b.order(5));        // two loaders, no shared state
    CHECK(a.order(2) == a.order(2));        // asking twice, or out of order, changes nothing
    CHECK(a.order(0) != a.order(1));        // a fresh shuffle per epoch
    CHECK(a.order(0) != c.order(0));        // the seed matters
    CHECK(a.order(0) != iota(500));         // it is shuffled at all
    CHECK(epoch_order(500, 3, 5) == a.order(5));
    // Fixed values: the shuffle must not depend on the standard library.
    CHECK(epoch_order(10, 0, 0) == epoch_order(10, 0, 0));
    CHECK(sorted(epoch_order(1, 9, 9)) == iota(1));
    CHECK(epoch_order(0, 9, 9).empty());
    const DataLoader plain(images, labels, {.batch = 7, .shuffle = false});
    CHECK(plain.order(3) == iota(500));
    // Loaders without labels
    const DataLoader nolabels(images, {.batch = 64, .seed = 3});
    CHECK_FALSE(nolabels.batch(0, 0).labels.defined());
    CHECK(nolabels.order(1) == a.order(1));
}

TEST_CASE("Loader: the rank split is disjoint, equal and complete", "[loader]") {
    const auto [images, labels] = dataset(120);
    for (int world : {1, 2, 3, 4, 7}) {
        for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
            std::vector<std::int64_t> all;
            for (int r = 0; r < world; ++r) {
                const DataLoader dl(images, labels, {.batch = 8, .seed = 11, .rank = r, .world_size = world});
                const std::vector<std::int64_t> mine = dl.order(epoch);
                CHECK(static_cast<std::int64_t>(mine.size()) == 120 / world);
                CHECK(dl.per_rank() == 120 / world);
                // the batches of a rank cover exactly its share
                std::vector<std::int64_t> via_batches;
                for (std::int64_t b = 0; b < dl.batches(); ++b) {
                    const Batch batch = dl.batch(epoch, b);
                    via_batches.insert(via_batches.end(), batch.indices.begin(), batch.indices.end());
                }
                CHECK(via_batches == mine);
                all.insert(all.end(), mine.begin(), mine.end());
            }
            const std::vector<std::int64_t> s = sorted(all);
            CHECK(std::adjacent_find(s.begin(), s.end()) == s.end());  // disjoint
            if (120 % world == 0) {
                CHECK(s == iota(120));  // complete
            } else {
                // the left-out tail is the last 120 mod world positions of the epoch's order
                const std::vector<std::int64_t> full = epoch_order(120, 11, epoch);
                CHECK(s == sorted(std::vector<std::int64_t>(full.begin(), full.end() - 120 % world)));
            }
        }
    }
}

TEST_CASE("Loader: limit keeps the first N images", "[loader]") {
    const auto [images, labels] = dataset(50);
    const DataLoader dl(images, labels, {.batch = 4, .seed = 1, .limit = 9});
    CHECK(dl.size() == 9);
    CHECK(dl.batches() == 3);
    CHECK(dl.batch(0, 2).images.shape() == Shape{1, 2, 3});
    for (std::int64_t e = 0; e < 3; ++e) CHECK(sorted(dl.order(e)) == iota(9));
    CHECK(DataLoader(images, labels, {.limit = 500}).size() == 50);  // a limit above N is N
    const DataLoader split(images, labels, {.batch = 4, .limit = 9, .rank = 1, .world_size = 2});
    CHECK(split.per_rank() == 4);
    for (std::int64_t i : split.order(0)) CHECK(i < 9);
}

TEST_CASE("Loader: bad options and labels are refused", "[loader]") {
    const auto [images, labels] = dataset(10);
    CHECK_THROWS_WITH(DataLoader(images, labels, {.batch = 0}), Catch::Contains("batch"));
    CHECK_THROWS_WITH(DataLoader(images, labels, {.rank = 2, .world_size = 2}), Catch::Contains("rank"));
    CHECK_THROWS_WITH(DataLoader(images, labels, {.world_size = 0}), Catch::Contains("world_size"));
    CHECK_THROWS_WITH(DataLoader(images, Tensor::zeros({9}, DType::i64), {}), Catch::Contains("labels"));
    const DataLoader dl(images, labels, {.batch = 4});
    CHECK_THROWS_WITH(dl.batch(0, 3), Catch::Contains("batch"));
}
