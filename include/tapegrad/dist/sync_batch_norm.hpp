// BatchNorm whose training-mode statistics span the global batch of a data-parallel run:
// the per-channel sums are added over every rank (dist::all_reduce_sum, differentiable, so
// the backward crosses the ranks too), as torch.nn.SyncBatchNorm does. With it, ranks
// holding halves of a batch normalise exactly as one process holding the whole batch
// would, and the running statistics (updated with the global count) stay equal on every
// rank. Plain nn::BatchNorm under data parallelism normalises each rank's share alone
// (torch DDP's default).
//
// Same constructor, parameters, buffers and state names as nn::BatchNorm, so checkpoints
// load into either; evaluation mode uses the running statistics and communicates nothing.
// Every rank must run its forward and backward in step (it is a collective).
#pragma once
#include "tapegrad/nn/layers.hpp"

namespace tg::dist {

class SyncBatchNorm : public nn::BatchNorm {
public:
    explicit SyncBatchNorm(std::int64_t num_features, double eps = 1e-5, double momentum = 0.1,
                           DType dtype = DType::f32);
};

}  // namespace tg::dist
