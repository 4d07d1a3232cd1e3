// The tapegrad::dist tests: one Catch2 program that every rank runs (ctest starts it under
// mpirun -np 2, and alone as a world of one). MPI is started before Catch2 and finalised
// after it; the test cases are collectives, run by every rank in the same order, and use
// CHECK rather than REQUIRE where an early exit on one rank would leave the others waiting.
#include "../catch/session.hpp"

#include "tapegrad/dist/context.hpp"

int main(int argc, char** argv) {
    tg::dist::Context mpi(&argc, &argv);
    return tg::testing::run_catch_session(argc, argv);
}
