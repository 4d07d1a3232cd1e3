#include "tapegrad/data/loader.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>

#include "tapegrad/core/error.hpp"
#include "tapegrad/core/random.hpp"

namespace tg {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Uniform in [0, bound) without modulo bias: draws above the largest multiple of bound are
// redrawn.
std::uint64_t below(Generator& g, std::uint64_t bound) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
    std::uint64_t r;
    do r = g.next_u64();
    while (r >= limit);
    return r % bound;
}

}  // namespace

std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch) {
    if (n < 0) fail("n", "epoch_order: n is ", n, ", must be >= 0");
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    Generator g(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(epoch))));
    for (std::int64_t i = n - 1; i > 0; --i)
        std::swap(order[static_cast<std::size_t>(i)],
                  order[static_cast<std::size_t>(below(g, static_cast<std::uint64_t>(i) + 1))]);
    return order;
}

struct DataLoader::OrderCache {
    std::mutex m;
    std::int64_t epoch = -1;
    std::shared_ptr<const std::vector<std::int64_t>> order;
};

DataLoader::DataLoader(const Tensor& images, const Tensor& labels, LoaderOptions opt) : opt_(opt) {
    if (!images.defined() || images.ndim() < 1) fail("images", "DataLoader: images must be a tensor [N, ...]");
    if (opt_.batch < 1) fail("batch", "DataLoader: batch is ", opt_.batch, ", must be >= 1");
    if (opt_.limit < 0) fail("limit", "DataLoader: limit is ", opt_.limit, ", must be >= 0");
    if (opt_.world_size < 1) fail("world_size", "DataLoader: world_size is ", opt_.world_size, ", must be >= 1");
    if (opt_.rank < 0 || opt_.rank >= opt_.world_size)
        fail("rank", "DataLoader: rank is ", opt_.rank, ", must be in [0, ", opt_.world_size, ")");
    images_ = images.contiguous();
    n_ = images_.shape()[0];
    if (labels.defined()) {
        if (labels.ndim() != 1 || labels.shape()[0] != n_)
            fail("labels", "DataLoader: labels must be [", n_, "] (one per image), got ", shape_str(labels.shape()));
        labels_ = labels.contiguous();
    }
    if (opt_.limit > 0) n_ = std::min(n_, opt_.limit);
    cache_ = std::make_shared<OrderCache>();
}

std::shared_ptr<const std::vector<std::int64_t>> DataLoader::shared_order(std::int64_t epoch) const {
    {
        const std::lock_guard<std::mutex> lock(cache_->m);
        if (cache_->order && cache_->epoch == epoch) return cache_->order;
    }
    std::vector<std::int64_t> all;
    if (opt_.shuffle) {
        all = epoch_order(n_, opt_.seed, epoch);
    } else {
        all.resize(static_cast<std::size_t>(n_));
        std::iota(all.begin(), all.end(), 0);
    }
    auto mine = std::make_shared<std::vector<std::int64_t>>(static_cast<std::size_t>(per_rank()));
    for (std::size_t k = 0; k < mine->size(); ++k)
        (*mine)[k] = all[k * static_cast<std::size_t>(opt_.world_size) + static_cast<std::size_t>(opt_.rank)];
    const std::lock_guard<std::mutex> lock(cache_->m);
    cache_->epoch = epoch;
    cache_->order = mine;
    return mine;
}

std::vector<std::int64_t> DataLoader::order(std::int64_t epoch) const { return *shared_order(epoch); }

Batch DataLoader::batch(std::int64_t epoch, std::int64_t b) const {
    if (b < 0 || b >= batches()) fail("batch", "DataLoader::batch: batch ", b, " of ", batches());
    const std::shared_ptr<const std::vector<std::int64_t>> o = shared_order(epoch);
    const std::int64_t from = b * opt_.batch, to = std::min<std::int64_t>(from + opt_.batch, per_rank());
    return gather(std::vector<std::int64_t>(o->begin() + from, o->begin() + to));
}

Batch DataLoader::gather(const std::vector<std::int64_t>& idx) const {
    Batch out;
    out.indices = idx;
    Shape s = images_.shape();
    s[0] = static_cast<std::int64_t>(idx.size());
    out.images = Tensor::empty(s, images_.dtype());
    const std::size_t row = static_cast<std::size_t>(images_.numel() / std::max<std::int64_t>(images_.shape()[0], 1)) *
                            dtype_size(images_.dtype());
    const auto* src = static_cast<const unsigned char*>(images_.raw_data());
    auto* dst = static_cast<unsigned char*>(out.images.raw_data());
    const std::size_t lsize = labels_.defined() ? dtype_size(labels_.dtype()) : 0;
    if (labels_.defined()) out.labels = Tensor::empty({s[0]}, labels_.dtype());
    for (std::size_t i = 0; i < idx.size(); ++i) {
        if (idx[i] < 0 || idx[i] >= n_) fail("index", "DataLoader: row ", idx[i], " of ", n_);
        std::memcpy(dst + i * row, src + static_cast<std::size_t>(idx[i]) * row, row);
        if (labels_.defined())
            std::memcpy(static_cast<unsigned char*>(out.labels.raw_data()) + i * lsize,
                        static_cast<const unsigned char*>(labels_.raw_data()) + static_cast<std::size_t>(idx[i]) * lsize,
                        lsize);
    }
    return out;
}

}  // namespace tg
