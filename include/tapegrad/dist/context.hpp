// The MPI context of a data-parallel run (tapegrad::dist, built when CMake finds MPI;
// TAPEGRAD_MPI=OFF leaves it out).
//
//   int main(int argc, char** argv) {
//       tg::dist::Context mpi(&argc, &argv);       // MPI_Init_thread, unless MPI runs already
//       ... mpi.rank(), mpi.world_size() ...
//   }                                              // MPI_Finalize, if this Context initialised it
//
// Started by `mpirun -np 2 prog`, every process is one rank of MPI_COMM_WORLD; started
// alone, it is rank 0 of a world of 1 and every collective is a copy. tapegrad's OpenMP
// threads never call MPI; only the thread that built the Context does (MPI_THREAD_FUNNELED).
#pragma once

namespace tg::dist {

class Context {
public:
    // Initialises MPI (argc/argv may be null) unless it is initialised already (by another
    // Context or by the program itself); only the Context that initialised it finalises it,
    // and not when it is destroyed by an exception: MPI_Finalize would wait for the other
    // ranks, which may be waiting for this one (mpirun ends the job when a rank exits
    // without finalising).
    Context(int* argc = nullptr, char*** argv = nullptr);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    int rank() const { return rank_; }              // in [0, world_size())
    int world_size() const { return world_size_; }  // processes in MPI_COMM_WORLD
    bool is_root() const { return rank_ == 0; }

    // Whether MPI is initialised and not yet finalised in this process.
    static bool initialized();

private:
    bool owns_ = false;
    int rank_ = 0, world_size_ = 1;
};

}  // namespace tg::dist
