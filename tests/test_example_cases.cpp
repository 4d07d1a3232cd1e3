// Runs the built tapegrad binary on every shipped case of examples/cases (the worked
// examples of OPS.md section 10) in a temporary copy, and compares each file it writes
// with the hand-computed expected*.npy next to the case (see examples/cases/README.md).
#include <catch2/catch.hpp>

#include <algorithm>

#include "tapegrad/core/npy.hpp"
#include "support_files.hpp"

using namespace tg;
using namespace tg::testsov;

namespace {

std::vector<fs::path> case_dirs() {
    std::vector<fs::path> out;
    const fs::path root = fs::path(TAPEGRAD_SOURCE_DIR) / "examples" / "cases";
    for (const auto& e : fs::directory_iterator(root))
        if (e.is_directory() && fs::exists(e.path() / "case.json")) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("shipped worked-example cases give the hand-computed results", "[cli]") {
    const std::vector<fs::path> dirs = case_dirs();
    // One folder per meaningful row of Examples 1 to 5.
    REQUIRE(dirs.size() >= 20);
    for (const char* prefix : {"ex1_", "ex2_", "ex3_", "ex4_", "ex5_"})
        CHECK(std::any_of(dirs.begin(), dirs.end(),
                          [&](const fs::path& d) { return d.filename().string().rfind(prefix, 0) == 0; }));

    int compared = 0;
    for (const fs::path& src : dirs) {
        const std::string name = src.filename().string();
        INFO("case " << name);
        TempDir tmp;
        const fs::path work = tmp.path() / name;
        fs::copy(src, work, fs::copy_options::recursive);
        const std::string case_json = (work / "case.json").string();

        if (fs::exists(work / "expected_error.txt")) {
            std::string key = read_text((work / "expected_error.txt").string());
            key.erase(key.find_last_not_of(" \n\r\t") + 1);
            const CommandResult r = run_tapegrad({"run", case_json}, tmp);
            CHECK(r.exit_code == 1);
            CHECK(count_lines(r.err) == 1);
            CHECK(r.err.rfind("error: ", 0) == 0);
            CHECK_THAT(r.err, Catch::Contains(key));
            CHECK_FALSE(fs::exists(work / "out.npy"));
            continue;
        }

        const CommandResult ex = run_tapegrad({"explain", case_json}, tmp);
        CHECK(ex.exit_code == 0);
        CHECK_THAT(ex.out, Catch::Contains("output shape"));
        const CommandResult r = run_tapegrad({"run", case_json}, tmp);
        INFO("stderr: " << r.err);
        REQUIRE(r.exit_code == 0);
        CHECK(r.err.empty());
        for (const auto& e : fs::directory_iterator(work)) {
            const std::string file = e.path().filename().string();
            if (file.rfind("expected", 0) != 0 || e.path().extension() != ".npy") continue;
            const std::string got_name = file == "expected.npy" ? "out.npy" : file.substr(std::string("expected_").size());
            INFO("comparing " << got_name << " with " << file);
            REQUIRE(fs::exists(work / got_name));
            const Tensor want = read_npy(e.path().string(), "expected");
            const Tensor got = read_npy((work / got_name).string(), "got");
            CHECK(got.shape() == want.shape());
            CHECK(got.values() == want.values());
            ++compared;
        }
    }
    CHECK(compared >= 20);
}
