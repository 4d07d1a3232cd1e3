// --distributed for the examples: data-parallel training over MPI with tapegrad::dist.
//
//   mpirun -np 2 build/release/fashion_classifier --distributed
//
// Every rank builds the same model (rank 0's weights are broadcast to the others), reads its
// own share of every batch (DataLoader's rank / world_size split: rank r takes positions r,
// r + R, ... of the epoch's order, so --batch images per rank and R·batch per step), and
// after backward the gradients are averaged over the ranks (dist::allreduce_gradients), so
// every rank takes the same optimizer step. BatchNorm layers become dist::SyncBatchNorm:
// their statistics are the whole step's. Dropout masks are drawn per rank. Rank 0 prints,
// evaluates and writes every file; the other ranks' stdout goes to /dev/null.
//
// With these, a run of R ranks at --batch B computes the loss curve of one process at
// --batch R·B (to float rounding: the sums are added in another order), except for dropout,
// whose masks depend on where an image sits in its batch (tests/distributed_example.sh
// checks it with --dropout 0).
//
// Without --distributed, or in a build without MPI (TAPEGRAD_MPI=OFF, where --distributed
// is an error), it is one process and changes nothing.
#pragma once
#include <cstdio>
#include <memory>
#include <optional>

#include "common.hpp"
#include "tapegrad/nn/layers.hpp"
#ifdef TAPEGRAD_WITH_MPI
#include "tapegrad/dist/collectives.hpp"
#include "tapegrad/dist/context.hpp"
#include "tapegrad/dist/sync_batch_norm.hpp"
#endif

namespace tg::example {

class Distributed {
public:
    Distributed(const Options& a, int* argc, char*** argv) {
        if (!a.distributed) return;
#ifdef TAPEGRAD_WITH_MPI
        mpi_.emplace(argc, argv);
        rank_ = mpi_->rank(), world_ = mpi_->world_size();
        if (rank_ != 0 && !std::freopen("/dev/null", "w", stdout)) fail("stdout", "cannot redirect rank ", rank_, "'s stdout");
#else
        (void)argc, (void)argv;
        fail("--distributed", "--distributed needs MPI: this build has TAPEGRAD_MPI=OFF (install libopenmpi-dev)");
#endif
    }

    int rank() const { return rank_; }
    int world_size() const { return world_; }

    // A BatchNorm layer followed by a fused ReLU (nn::BatchNorm::with_relu): dist::SyncBatchNorm
    // in a distributed run, nn::BatchNorm otherwise.
    std::shared_ptr<nn::Module> batch_norm_relu(std::int64_t features) const {
#ifdef TAPEGRAD_WITH_MPI
        if (mpi_) {
            auto bn = std::make_shared<dist::SyncBatchNorm>(features);
            bn->with_relu();
            return bn;
        }
#endif
        auto bn = std::make_shared<nn::BatchNorm>(features);
        bn->with_relu();
        return bn;
    }

    // Starts every rank from rank 0's weights and buffers.
    void broadcast(nn::Module& model) const {
#ifdef TAPEGRAD_WITH_MPI
        if (mpi_) dist::broadcast_parameters(model);
#else
        (void)model;
#endif
    }

    // fit()'s hooks: average the gradients after backward, and the step's loss.
    Parallel parallel(const nn::Module& model) const {
        Parallel p{rank_, world_, {}, {}};
#ifdef TAPEGRAD_WITH_MPI
        if (mpi_) {
            p.after_backward = [params = model.parameters()] { dist::allreduce_gradients(params); };
            p.mean = [](double x) { return dist::average(x); };
        }
#else
        (void)model;
#endif
        return p;
    }

private:
#ifdef TAPEGRAD_WITH_MPI
    std::optional<dist::Context> mpi_;
#endif
    int rank_ = 0, world_ = 1;
};

}  // namespace tg::example
