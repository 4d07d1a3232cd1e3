// What the lessons (docs/lessons.md) share: claims that are checked, and the --out folder.
// Header-only: every examples/*.cpp is its own program.
//
// A lesson states facts and checks each one as it goes: claim(holds, "what") throws when
// a fact stops being true, main() catches, prints one `error: claim failed: what` line and
// exits 1, so ctest fails loudly and names the broken claim.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli/options.hpp"
#include "tapegrad/core/error.hpp"

namespace tg::lesson {

// Throws tg::Error("claim failed: <what>") unless `holds`; `what` is any streamable pieces.
template <class... Parts>
void claim(bool holds, const Parts&... what) {
    if (!holds) fail("claim", "claim failed: ", what...);
}

// The command line of a lesson that writes pictures: --help, or --out DIR (default out/,
// created when missing; the lesson writes only there). Returns the folder.
inline std::filesystem::path parse_out_dir(int argc, char** argv, const char* name, const char* summary) {
    std::string out = "out";
    cli::Parser cl(name, summary);
    cl.option("--out", out, "where the pictures go").type("DIR");
    if (!cl.parse(argc, argv)) std::exit(0);
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec || !std::filesystem::is_directory(out))
        fail("--out", "cannot create the output folder '", out, "'", ec ? ": " + ec.message() : std::string());
    return out;
}

}  // namespace tg::lesson
