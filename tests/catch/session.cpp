// Catch2's implementation (v2 is a single header: CATCH_CONFIG_RUNNER compiles all of it here,
// without a main), compiled once for both test programs, whose mains call run_catch_session.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "session.hpp"

int tg::testing::run_catch_session(int argc, char** argv) { return Catch::Session().run(argc, argv); }
