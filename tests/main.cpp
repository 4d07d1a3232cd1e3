// tapegrad_tests' main: Catch2's session over every test case linked in.
#include "catch/session.hpp"

int main(int argc, char** argv) { return tg::testing::run_catch_session(argc, argv); }
