#include "tapegrad/dist/sync_batch_norm.hpp"

#include "tapegrad/dist/collectives.hpp"

namespace tg::dist {

SyncBatchNorm::SyncBatchNorm(std::int64_t num_features, double eps, double momentum, DType dtype)
    : nn::BatchNorm(num_features, eps, momentum, dtype) {
    across_ = [](const ag::Variable& partial) { return all_reduce_sum(partial); };
}

}  // namespace tg::dist
