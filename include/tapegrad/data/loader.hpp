// A data loader: a dataset of images [N, ...] with optional labels [N], read in batches in
// an order that is shuffled afresh every epoch.
//
//   DataLoader train(images, labels, {.batch = 64, .seed = 1, .limit = 0});
//   for (std::int64_t epoch = 0; epoch < E; ++epoch)
//       for (std::int64_t b = 0; b < train.batches(); ++b) {
//           const Batch batch = train.batch(epoch, b);   // images [B, ...], labels [B]
//           ...
//       }
//
// The order of an epoch is a function of (seed, epoch) alone (epoch_order), so a run
// resumed at an epoch boundary needs no RNG state beyond the epoch number. The loader keeps
// the last epoch's order it made (batch() would otherwise shuffle the whole dataset again
// for every batch); that cache changes no result, and calls from several threads are safe.
// The permutation is a Fisher-Yates shuffle driven by tg::Generator
// (std::mt19937_64, whose sequence the standard fixes) with unbiased bounded draws of our
// own, so it is the same with every compiler and standard library.
//
// limit keeps the first `limit` images of the dataset (0: all). Distributed runs split each
// epoch's order by rank: rank r of world_size takes positions r, r + world_size, ... of the
// first world_size·⌊n / world_size⌋ positions, so the ranks' shares are disjoint, of equal
// size, and together cover the whole order when world_size divides n (otherwise the last
// n mod world_size positions of each epoch's order, different images every epoch, are
// left out, as torch's DistributedSampler with drop_last does). The last batch of a rank's
// share may be partial; it is kept.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tg {

struct LoaderOptions {
    std::int64_t batch = 64;  // images per batch (>= 1)
    std::uint64_t seed = 0;   // the shuffle seed
    bool shuffle = true;      // false: every epoch in dataset order 0, 1, 2, ...
    std::int64_t limit = 0;   // use the first `limit` images only (0: all)
    int rank = 0;             // this process's rank, in [0, world_size)
    int world_size = 1;
};

struct Batch {
    Tensor images;                      // [B, ...] (the dataset's item shape), contiguous, the dataset's dtype
    Tensor labels;                      // [B] of the labels' dtype; undefined when the dataset has no labels
    std::vector<std::int64_t> indices;  // the dataset rows, in batch order
};

// The permutation of 0..n-1 for `epoch` under `seed`, exactly: start from 0, 1, ..., n-1;
// seed a tg::Generator (std::mt19937_64) with splitmix64(seed ^ splitmix64(epoch)), where
// splitmix64 is Vigna's finaliser (add 0x9e3779b97f4a7c15, then xor-shift-multiply by
// 0xbf58476d1ce4e5b9 and 0x94d049bb133111eb with shifts 30, 27, 31); then for i = n-1 down
// to 1 draw r = next_u64(), redrawing while r >= 2^64 - 1 - ((2^64 - 1) mod (i+1)), and
// swap positions i and r mod (i+1). (tests/test_loader.cpp checks this against its own
// reimplementation and against values computed independently.)
std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch);

class DataLoader {
public:
    // images [N, ...] of any dtype; labels [N] (any dtype) or undefined. Both are kept by
    // reference (tensors share storage), made contiguous once.
    DataLoader(const Tensor& images, const Tensor& labels, LoaderOptions opt);
    explicit DataLoader(const Tensor& images, LoaderOptions opt) : DataLoader(images, Tensor(), std::move(opt)) {}

    std::int64_t size() const { return n_; }                    // images in use (after limit)
    std::int64_t per_rank() const { return n_ / opt_.world_size; }  // images of one rank per epoch
    std::int64_t batches() const { return (per_rank() + opt_.batch - 1) / opt_.batch; }  // per epoch
    const LoaderOptions& options() const { return opt_; }

    // This rank's share of epoch `epoch`'s order (per_rank() dataset rows).
    std::vector<std::int64_t> order(std::int64_t epoch) const;
    // Batch b (0 <= b < batches()) of epoch `epoch`.
    Batch batch(std::int64_t epoch, std::int64_t b) const;
    // The rows `idx` as one batch.
    Batch gather(const std::vector<std::int64_t>& idx) const;

private:
    struct OrderCache;  // the last epoch's order (loader.cpp); shared by copies, whose orders are the same
    std::shared_ptr<const std::vector<std::int64_t>> shared_order(std::int64_t epoch) const;
    Tensor images_, labels_;
    LoaderOptions opt_;
    std::int64_t n_ = 0;
    std::shared_ptr<OrderCache> cache_;
};

}  // namespace tg
