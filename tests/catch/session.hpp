// Catch2's session, for the test programs' mains (tests/main.cpp, tests/dist/main.cpp). Catch2 v2
// declares Catch::Session only where its implementation is compiled (tests/catch/session.cpp).
#pragma once

namespace tg::testing {

// Runs the tests the command line selects (Catch::Session().run): 0 when they all pass.
int run_catch_session(int argc, char** argv);

}  // namespace tg::testing
