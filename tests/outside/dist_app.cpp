// tapegrad::dist from the installed package (tests/outside/installed, when tapegrad was
// built with MPI): started alone, the program is a world of one rank, where averaging
// gradients over the ranks leaves them as they are.
#include <tapegrad/autograd/ops.hpp>
#include <tapegrad/dist/collectives.hpp>
#include <tapegrad/dist/context.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    tg::dist::Context mpi(&argc, &argv);
    tg::ag::Variable w = tg::ag::param(tg::Tensor::from({3}, {1, 2, 3}));
    tg::ag::sum(tg::ag::mul(w, w)).backward();  // gradient 2w
    tg::dist::allreduce_gradients({w}, 4);
    const std::vector<double> g = w.grad().values();
    std::printf("rank %d of %d, gradient %g %g %g\n", mpi.rank(), mpi.world_size(), g[0], g[1], g[2]);
    return mpi.world_size() == 1 && g == std::vector<double>{2, 4, 6} ? 0 : 1;
}
