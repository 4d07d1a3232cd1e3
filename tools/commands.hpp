// The `tapegrad` commands other than the ones tools/tapegrad.cpp runs itself.
#pragma once
#include <string>

#include "cli/options.hpp"

namespace tg {

// tools/gradcheck_cmd.cpp: `tapegrad gradcheck CASE.json`.
int cmd_gradcheck(const std::string& path, double work_limit);

// tools/bench_cmd.cpp: `tapegrad bench`, its options as given on the command line.
struct BenchArgs {
    std::string shapes_path, only, ops = "fwd,bwd_data,bwd_weights", layout, dtype = "f32", clock = "wall";
    int threads = 0, batch = 0;  // 0: the library default / each shape's own N
    bool as_json = false;
    double min_time = 0.3;
};
// Adds the `bench` command and its options to the command line, filling `args`.
cli::Command& add_bench_command(cli::Parser& parser, BenchArgs& args);
int cmd_bench(const BenchArgs& args);

}  // namespace tg
