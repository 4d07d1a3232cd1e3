// docs/distributed.md's program, compiled with MPI and run as one rank (ctest:
// docs.snippet.distributed); under mpirun every rank trains on its share of each batch.
// doc-begin: program
#include <tapegrad/data/loader.hpp>
#include <tapegrad/dist/collectives.hpp>
#include <tapegrad/dist/context.hpp>
#include <tapegrad/dist/sync_batch_norm.hpp>
#include <tapegrad/tapegrad.hpp>

#include <iostream>

using namespace tg;

int main(int argc, char** argv) {
    tg::dist::Context mpi(&argc, &argv);     // MPI_Init_thread ... MPI_Finalize (RAII)
    // Stand-ins for Fashion-MNIST (tapegrad/data/idx.hpp reads the real files): 128 images, 10 classes.
    std::vector<double> labels(128);
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<double>(i % 10);
    const Tensor x = rand({128, 1, 28, 28}), y = Tensor::from({128}, labels, DType::i64);
    DataLoader train(x, y, {.batch = 32, .seed = 1, .rank = mpi.rank(), .world_size = mpi.world_size()});
    manual_seed(1);
    nn::Sequential model{nn::Conv(1, 8, nn::ConvOptions{3, 3}.padding(1)), tg::dist::SyncBatchNorm(8), nn::ReLU(),
                         nn::Flatten(), nn::Linear(8 * 28 * 28, 10)};
    tg::dist::broadcast_parameters(model);   // every rank starts from rank 0's weights and buffers
    nn::Adam opt(model.parameters(), 1e-3);
    double first = -1, global = 0;
    for (std::int64_t epoch = 0; epoch < 3; ++epoch)
        for (std::int64_t b = 0; b < train.batches(); ++b) {
            const Batch batch = train.batch(epoch, b);
            opt.zero_grad();
            ag::Variable loss = ag::cross_entropy(model(ag::constant(batch.images)), ag::constant(batch.labels));
            loss.backward();
            tg::dist::allreduce_gradients(model.parameters());   // the mean gradient over the ranks
            opt.step();
            global = tg::dist::average(loss.item());  // the step's loss, the same on every rank
            if (first < 0) first = global;
        }
    if (mpi.is_root()) std::cout << "loss " << first << " -> " << global << "\n";
    return global < first ? 0 : 1;
}
// doc-end: program
