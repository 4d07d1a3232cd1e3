// The data loader (tapegrad/data/loader.hpp): every index exactly once per epoch, the same order for
// the same (seed, epoch) and another for another epoch, the shuffle pinned to the documented
// algorithm (a reimplementation on std::mt19937_64 and values computed independently), the
// rank split disjoint, equal and complete, limit, batch shapes (last partial batch kept) and
// the rows and labels gathered.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
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

// epoch_order as tapegrad/data/loader.hpp documents it, written again from that text with
// std::mt19937_64 directly (not tg::Generator) and its own splitmix64 and bounded draw.
std::vector<std::int64_t> documented_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch) {
    auto splitmix64 = [](std::uint64_t z) {
        z += 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    };
    std::mt19937_64 engine(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(epoch))));
    std::vector<std::int64_t> order = iota(n);
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();  // 2^64 - 1
    for (std::int64_t i = n - 1; i > 0; --i) {
        const std::uint64_t bound = static_cast<std::uint64_t>(i) + 1;
        std::uint64_t r = engine();
        while (r >= kMax - kMax % bound) r = engine();
        std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(r % bound)]);
    }
    return order;
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
    // The cached order of the last epoch asked for: batches of epochs taken in turn, and of
    // a copy of the loader, are those of each epoch's own order.
    const DataLoader copy = a;
    for (std::int64_t e : {5, 6, 5, 5, 7, 6}) {
        const std::vector<std::int64_t> want = epoch_order(500, 3, e);
        for (const DataLoader* l : {&a, &copy})
            for (std::int64_t bi : {0, 3, 71}) {
                const std::vector<std::int64_t> got = l->batch(e, bi).indices;
                const std::size_t from = static_cast<std::size_t>(bi * 7);
                CHECK(got == std::vector<std::int64_t>(want.begin() + static_cast<std::ptrdiff_t>(from),
                                                       want.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(from + 7, 500))));
            }
    }
    CHECK(sorted(epoch_order(1, 9, 9)) == iota(1));
    CHECK(epoch_order(0, 9, 9).empty());
    const DataLoader plain(images, labels, {.batch = 7, .shuffle = false});
    CHECK(plain.order(3) == iota(500));
    // Loaders without labels
    const DataLoader nolabels(images, {.batch = 64, .seed = 3});
    CHECK_FALSE(nolabels.batch(0, 0).labels.defined());
    CHECK(nolabels.order(1) == a.order(1));
}

TEST_CASE("Loader: the shuffle is the documented Fisher-Yates on std::mt19937_64", "[loader]") {
    // The engine itself: the standard fixes the 10 000th output of a default-seeded
    // std::mt19937_64 ([rand.predef]).
    std::mt19937_64 engine;
    engine.discard(9999);
    CHECK(engine() == 9981545732273789042ull);
    // Values computed independently, by a pure-Python MT19937-64 (Matsumoto and
    // Nishimura's reference algorithm), splitmix64 and Fisher-Yates following the text of
    // tapegrad/data/loader.hpp.
    CHECK(epoch_order(10, 0, 0) == std::vector<std::int64_t>{6, 1, 2, 4, 7, 5, 3, 0, 9, 8});
    CHECK(epoch_order(10, 1, 1) == std::vector<std::int64_t>{4, 3, 6, 5, 8, 7, 2, 0, 1, 9});
    CHECK(epoch_order(7, 12345, 0) == std::vector<std::int64_t>{3, 1, 5, 6, 2, 4, 0});
    CHECK(epoch_order(20, 42, 3) ==
          std::vector<std::int64_t>{8, 4, 14, 19, 5, 15, 13, 7, 0, 2, 10, 3, 6, 16, 17, 12, 18, 9, 11, 1});
    const std::vector<std::int64_t> fashion = epoch_order(60000, 1, 1);  // the classifier's epoch 1, seed 1
    CHECK(std::vector<std::int64_t>(fashion.begin(), fashion.begin() + 8) ==
          std::vector<std::int64_t>{2848, 9588, 30701, 41692, 59445, 22387, 21473, 15900});
    // And the whole permutation against the reimplementation above, for a few sizes, seeds
    // and epochs (negative epochs and large seeds included).
    struct Run {
        std::int64_t n;
        std::uint64_t seed;
        std::int64_t epoch;
    };
    for (const Run& r : {Run{1, 0, 0}, Run{2, 5, 1}, Run{97, 3, 2}, Run{1000, 0x123456789abcdefull, 7},
                         Run{4096, ~std::uint64_t{0}, -1}, Run{60000, 2, 3}}) {
        INFO("n " << r.n << " seed " << r.seed << " epoch " << r.epoch);
        CHECK(epoch_order(r.n, r.seed, r.epoch) == documented_order(r.n, r.seed, r.epoch));
    }
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
