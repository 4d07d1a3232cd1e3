#include "tapegrad/dist/context.hpp"

#include <mpi.h>

#include <exception>

#include "tapegrad/core/error.hpp"

namespace tg::dist {

Context::Context(int* argc, char*** argv) {
    if (!initialized()) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (finalized) fail("mpi", "dist::Context: MPI was finalised already in this process; it cannot start again");
        int provided = 0;
        if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            fail("mpi", "dist::Context: MPI_Init_thread failed");
        owns_ = true;
        if (provided < MPI_THREAD_FUNNELED) {
            MPI_Finalize();
            fail("mpi", "dist::Context: MPI gives thread level ", provided, ", tapegrad's OpenMP threads need ",
                 MPI_THREAD_FUNNELED, " (MPI_THREAD_FUNNELED)");
        }
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
}

Context::~Context() {
    // MPI_Finalize waits for every rank: a rank leaving on an error while the others wait
    // in a collective would hang the job. Without it the process exits with its error and
    // mpirun ends the job.
    if (owns_ && initialized() && std::uncaught_exceptions() == 0) MPI_Finalize();
}

bool Context::initialized() {
    int init = 0, finalized = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&finalized);
    return init && !finalized;
}

}  // namespace tg::dist
