// The docs cannot drift from the code: every ```cpp block of README.md and docs/*.md is a
// region of a file that the build compiles (and, for examples/ and docs/snippets/, that ctest
// runs). The line above the block names it:
//
//     <!-- code: docs/snippets/nn.cpp#training-step -->
//
// and in that file the region is the lines between `// doc-begin: training-step` and
// `// doc-end: training-step`, less their common indentation. This test compares them;
// scripts/sync_docs.py copies a changed region into its block.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tapegrad/autograd/catch_matchers.hpp"
#include "tapegrad/tapegrad.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The region NAME of a source file, dedented; `error` is set when it is missing or unclosed.
std::vector<std::string> region(const std::string& source, const std::string& name, std::string& error) {
    const std::vector<std::string> lines = split_lines(source);
    std::vector<std::string> body;
    bool inside = false, found = false;
    for (const std::string& line : lines) {
        const std::string t = trim(line);
        if (t == "// doc-begin: " + name) {
            if (found) { error = "region '" + name + "' is defined twice"; return {}; }
            inside = found = true;
        } else if (t == "// doc-end: " + name) {
            if (!inside) { error = "region '" + name + "' ends before it begins"; return {}; }
            inside = false;
        } else if (inside) {
            body.push_back(line);
        }
    }
    if (!found) error = "no region '" + name + "' (a line '// doc-begin: " + name + "')";
    else if (inside) error = "region '" + name + "' has no '// doc-end: " + name + "' line";
    std::size_t indent = std::string::npos;
    for (const std::string& l : body)
        if (!trim(l).empty()) indent = std::min(indent, l.find_first_not_of(' '));
    for (std::string& l : body) l = trim(l).empty() ? "" : l.substr(indent == std::string::npos ? 0 : indent);
    return body;
}

// The folders whose .cpp files the build compiles.
bool compiled(const std::string& path) {
    for (const char* room : {"examples/", "docs/snippets/", "tests/", "core/", "ops/", "autograd/", "nn/", "data/",
                             "spec/", "dist/", "tools/"})
        if (path.rfind(room, 0) == 0) return path.size() > 4 && path.substr(path.size() - 4) == ".cpp";
    return false;
}

// Problems of one markdown text (named `md` in the messages), one line each.
std::vector<std::string> check_markdown(const std::string& text, const std::string& md, const fs::path& root) {
    std::vector<std::string> problems;
    const std::vector<std::string> lines = split_lines(text);
    const std::string marker = "<!-- code: ";
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string t = trim(lines[i]);
        if (t.rfind("```", 0) != 0 || t == "```") continue;
        std::size_t end = i + 1;  // the closing fence
        while (end < lines.size() && trim(lines[end]) != "```") ++end;
        const std::string where = md + ":" + std::to_string(i + 1);
        if (t == "```cpp" || t == "```c++") {
            const std::string above = i > 0 ? trim(lines[i - 1]) : "";
            if (above.rfind(marker, 0) != 0 || above.size() < marker.size() + 4 ||
                above.substr(above.size() - 4) != " -->") {
                problems.push_back(where + ": a cpp block without a '<!-- code: FILE#REGION -->' line above it");
            } else {
                const std::string ref = above.substr(marker.size(), above.size() - marker.size() - 4);
                const std::size_t hash = ref.find('#');
                const std::string file = ref.substr(0, hash), name = hash == std::string::npos ? "" : ref.substr(hash + 1);
                std::string error;
                if (name.empty()) error = "'" + ref + "' names no region (FILE#REGION)";
                else if (!compiled(file)) error = "'" + file + "' is not a .cpp file the build compiles";
                else if (!fs::exists(root / file)) error = "'" + file + "' does not exist";
                std::vector<std::string> want;
                if (error.empty()) want = region(read_text(root / file), name, error);
                const std::vector<std::string> got(lines.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                                   lines.begin() + static_cast<std::ptrdiff_t>(end));
                if (error.empty() && got != want) {
                    std::size_t k = 0;
                    while (k < got.size() && k < want.size() && got[k] == want[k]) ++k;
                    error = "differs from " + ref + " at block line " + std::to_string(k + 1) + ": docs '" +
                            (k < got.size() ? got[k] : "<end>") + "', code '" + (k < want.size() ? want[k] : "<end>") + "'";
                }
                if (!error.empty()) problems.push_back(where + ": " + error);
            }
        }
        i = end;
    }
    return problems;
}

std::vector<fs::path> markdown_files(const fs::path& root) {
    std::vector<fs::path> files{root / "README.md"};
    for (const auto& e : fs::directory_iterator(root / "docs"))
        if (e.path().extension() == ".md") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

TEST_CASE("every cpp block of the docs is a region of compiled code", "[docs]") {
    const fs::path root = TAPEGRAD_SOURCE_DIR;
    int blocks = 0;
    for (const fs::path& md : markdown_files(root)) {
        const std::string text = read_text(md);
        for (std::size_t p = text.find("```cpp"); p != std::string::npos; p = text.find("```cpp", p + 1)) ++blocks;
        for (const std::string& problem : check_markdown(text, fs::relative(md, root).string(), root))
            FAIL_CHECK(problem + " (python3 scripts/sync_docs.py copies the code into the docs)");
    }
    CHECK(blocks >= 10);  // the docs do have code: the walk found it
}

TEST_CASE("the docs check finds a block that drifted, lost its marker or names a missing region", "[docs]") {
    const fs::path root = TAPEGRAD_SOURCE_DIR;
    const std::string good = "text\n<!-- code: tests/test_docs.cpp#checked-example -->\n```cpp\n"
                             "int twice(int x) { return 2 * x; }\n```\n";
    CHECK(check_markdown(good, "good.md", root).empty());
    std::string drifted = good;
    drifted.replace(drifted.find("2 * x"), 5, "x + x");
    const auto d = check_markdown(drifted, "drifted.md", root);
    REQUIRE(d.size() == 1);
    CHECK_THAT(d[0], Catch::Contains("drifted.md:3") && Catch::Contains("block line 1"));
    const auto m = check_markdown("```cpp\nint x;\n```\n", "bare.md", root);
    REQUIRE(m.size() == 1);
    CHECK_THAT(m[0], Catch::Contains("without a '<!-- code:"));
    const auto r = check_markdown("<!-- code: tests/test_docs.cpp#no-such -->\n```cpp\n```\n", "r.md", root);
    REQUIRE(r.size() == 1);
    CHECK_THAT(r[0], Catch::Contains("no region 'no-such'"));
    const auto f = check_markdown("<!-- code: README.md#x -->\n```cpp\n```\n", "f.md", root);
    REQUIRE(f.size() == 1);
    CHECK_THAT(f[0], Catch::Contains("not a .cpp file the build compiles"));
}

// doc-begin: checked-example
int twice(int x) { return 2 * x; }
// doc-end: checked-example

TEST_CASE("the region the docs check uses as its example compiles and runs", "[docs]") { CHECK(twice(21) == 42); }

// README's Catch2 matcher example: swish written with ag ops, checked as a user would.
namespace {
tg::ag::Variable swish(const tg::ag::Variable& x) { return x * tg::ag::sigmoid(x); }
}  // namespace

// doc-begin: catch-matchers
using tg::test::PassesGradcheck;

TEST_CASE("swish passes gradcheck", "[docs]") {
    const tg::ag::Function f = [](const std::vector<tg::ag::Variable>& v) { return swish(v[0]); };
    CHECK_THAT(f, PassesGradcheck({tg::randn({2, 3}, tg::DType::f64)}));  // also PassesGradgradcheck, PassesAdjointCheck
}
// doc-end: catch-matchers
