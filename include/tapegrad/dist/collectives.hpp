// What a data-parallel training step needs from MPI (tapegrad::dist): every rank holds the
// same model, trains on its own share of each batch (DataLoader's rank / world_size split),
// and after backward the gradients are averaged over the ranks, so every rank takes the
// same optimizer step.
//
//   tg::dist::Context mpi(&argc, &argv);
//   DataLoader train(x, y, {.batch = 32, .seed = 1, .rank = mpi.rank(), .world_size = mpi.world_size()});
//   nn::Sequential model = ...;
//   tg::dist::broadcast_parameters(model);               // every rank starts from rank 0's weights
//   nn::Adam opt(model.parameters(), 1e-3);
//   for (...) {
//       opt.zero_grad();
//       ag::Variable loss = ag::cross_entropy(model(...), ...);
//       loss.backward();
//       tg::dist::allreduce_gradients(model.parameters());  // the mean gradient of the global batch
//       opt.step();
//       double global_loss = tg::dist::average(loss.item());
//   }
//
// Every function here is a collective: all ranks call it, in the same order, with matching
// arguments (the same parameters in the same order). They need MPI running (a
// dist::Context); in a world of one process they change nothing.
#pragma once
#include <cstddef>
#include <vector>

#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/nn/module.hpp"

namespace tg::dist {

// torch DDP's default bucket size.
inline constexpr std::size_t kDefaultBucketBytes = std::size_t{25} << 20;

// Replaces each parameter's gradient by its mean over the ranks. The gradients are packed,
// in parameter order and per dtype (f32, f64), into buckets of at most bucket_bytes (a
// parameter larger than what is left of a bucket continues in the next one), and each
// bucket is summed by one MPI_Allreduce, then divided by the world size. A parameter that
// has no gradient on some rank counts as zero there; one that has none on any rank is left
// without. Parameters not requiring a gradient are skipped. Errors: a gradient of another
// dtype (f16, bf16), bucket_bytes 0, or ranks giving different numbers of parameters.
void allreduce_gradients(const std::vector<ag::Variable>& params, std::size_t bucket_bytes = kDefaultBucketBytes);

// Copies rank `root`'s parameters and buffers (running statistics, ...) into every other
// rank's module: the robust way to start all ranks equal. The modules must have the same
// state layout on every rank (checked: the number of tensors and of bytes).
void broadcast_parameters(nn::Module& module, int root = 0);

// The mean of `value` over the ranks (a metric, e.g. a loss).
double average(double value);

// The element-wise sum of x over the ranks, differentiable: its backward sums the gradient
// over the ranks the same way. Used for statistics that span the global batch
// (SyncBatchNorm); x is f32 or f64 and of the same shape on every rank.
ag::Variable all_reduce_sum(const ag::Variable& x);

}  // namespace tg::dist
