// The command line's files and limits, tried as a hostile user would (issue 10, section 1):
// outputs compared as files, outputs never replacing an input, NUL bytes, symlinks and
// devices as targets, FIFOs as inputs, all-or-nothing writes that leave old files alone,
// deep JSON, over-long values, integers past int64, and the work and memory limits.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "support_files.hpp"
#include "tapegrad/core/npy.hpp"

using namespace tg;
using namespace tg::testsov;

namespace {

// A folder with data.npy [1, 1, 3] and filter.npy [1, 1, 3] of OPS.md Example 1, and a
// case file built from `body` (JSON object members).
struct CaseFiles {
    TempDir dir;
    CaseFiles() {
        write_npy(dir / "data.npy", Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f32));
        write_npy(dir / "filter.npy", Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f32));
        write_npy(dir / "dy.npy", Tensor::from({1, 1, 5}, {1, 0, 0, 0, 1}, DType::f32));
    }
    CommandResult run(const std::string& body, std::vector<std::string> extra = {}) {
        write_bytes(dir / "case.json", R"({"op": "ConvolutionBackpropData", "attrs": {"strides": [2], "pads_begin": [1],
            "pads_end": [1]}, "inputs": ["data.npy", "filter.npy"], )" + body + "}");
        std::vector<std::string> args{"run", dir / "case.json"};
        args.insert(args.end(), extra.begin(), extra.end());
        return run_tapegrad(args, dir);
    }
};

}  // namespace

TEST_CASE("cli files: the same file under two spellings is one output", "[cli][files]") {
    CaseFiles c;
    const CommandResult r = c.run(R"("output": "out.npy", "grad_output": "dy.npy", "grad_inputs": ["./out.npy", null])");
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("same file") && Catch::Contains("grad_inputs[0]"));
    CHECK_FALSE(std::filesystem::exists(c.dir / "out.npy"));
}

TEST_CASE("cli files: an output may not replace the case file it was read from", "[cli][files]") {
    CaseFiles c;
    const CommandResult r = c.run(R"("output": "./case.json")");  // it wrote its result over the case file
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("is the same file as the case file") && Catch::Contains("may not replace an input"));
    CHECK_THAT(read_text(c.dir / "case.json"), Catch::StartsWith("{"));  // still the case file
}

TEST_CASE("cli files: an output may not replace an input, even through a hard link", "[cli][files]") {
    CaseFiles c;
    const std::string before = read_text(c.dir / "filter.npy");
    CommandResult r = c.run(R"("output": "filter.npy")");
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("inputs[1]") && Catch::Contains("may not replace an input"));
    REQUIRE(::link((c.dir / "data.npy").c_str(), (c.dir / "alias.npy").c_str()) == 0);
    r = c.run(R"("output": "alias.npy")");
    CHECK_THAT(r.err, Catch::Contains("inputs[0]"));
    CHECK(read_text(c.dir / "filter.npy") == before);
}

TEST_CASE("cli files: NUL bytes in paths are errors, not truncations", "[cli][files]") {
    CaseFiles c;
    CommandResult r = c.run(R"("output": "out.npy\u0000x")");
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("NUL"));
    CHECK_FALSE(std::filesystem::exists(c.dir / "out.npy"));
    write_bytes(c.dir / "case2.json", R"({"op": "ConvolutionBackpropData", "inputs": ["data.npy\u0000.txt", "filter.npy"],
        "output": "o.npy"})");
    r = run_tapegrad({"run", c.dir / "case2.json"}, c.dir);
    CHECK_THAT(r.err, Catch::Contains("NUL") && Catch::Contains("inputs[0]"));
}

TEST_CASE("cli files: a symlink or a device as the output is refused and left alone", "[cli][files]") {
    CaseFiles c;
    write_bytes(c.dir / "precious.txt", "keep me");
    std::filesystem::create_symlink(c.dir / "precious.txt", c.dir / "link.npy");
    CommandResult r = c.run(R"("output": "link.npy")");
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("symbolic link"));
    CHECK(std::filesystem::is_symlink(c.dir / "link.npy"));
    CHECK(read_text(c.dir / "precious.txt") == "keep me");
    r = c.run(R"("output": "/dev/null")");
    CHECK_THAT(r.err, Catch::Contains("not a regular file"));
}

TEST_CASE("cli files: a FIFO as an input is refused at once instead of blocking", "[cli][files]") {
    CaseFiles c;
    std::filesystem::remove(c.dir / "data.npy");
    REQUIRE(::mkfifo((c.dir / "data.npy").c_str(), 0600) == 0);
    const CommandResult r = c.run(R"("output": "out.npy")");
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("not a regular file"));
}

TEST_CASE("cli files: a failed run leaves every existing file as it was", "[cli][files]") {
    CaseFiles c;
    write_bytes(c.dir / "out.npy", "old result");
    const CommandResult r =
        c.run(R"("output": "out.npy", "grad_output": "dy.npy", "grad_inputs": ["missing/dd.npy", null])");
    CHECK(one_error_line(r));
    CHECK(read_text(c.dir / "out.npy") == "old result");
    for (const std::string& f : c.dir.files()) CHECK(f.find(".tmp.") == std::string::npos);  // no temporaries left
    // and a run that succeeds replaces it whole, with every requested file
    const CommandResult ok =
        c.run(R"("output": "out.npy", "grad_output": "dy.npy", "grad_inputs": ["dd.npy", "df.npy"])");
    REQUIRE(ok.exit_code == 0);
    CHECK(read_npy(c.dir / "out.npy").values() == std::vector<double>{2, 5, 4, 9, 6});
    CHECK(read_npy(c.dir / "dd.npy").values() == std::vector<double>{2, 0, 2});
}

TEST_CASE("cli files: deep JSON, huge values and integers past int64 give one clear line", "[cli][files]") {
    CaseFiles c;
    // 100 000 nested arrays used to overflow the stack
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    write_bytes(c.dir / "deep.json", R"({"op": "Convolution", "attrs": {"strides": )" + deep + "}}");
    CommandResult r = run_tapegrad({"run", c.dir / "deep.json"}, c.dir);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("values nest deeper than 32 levels at attrs.strides[0]...[0] ([0] 31 times)"));
    // ... and names where, in an object inside a list inside an object
    std::string objects = R"({"op": "Convolution", "inputs": ["a.npy", {"shape": [1, {"x": )";
    for (int i = 0; i < 40; ++i) objects += R"({"y": )";
    objects += "1" + std::string(40, '}') + "]}]}";
    write_bytes(c.dir / "deep_objects.json", objects);
    r = run_tapegrad({"run", c.dir / "deep_objects.json"}, c.dir);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("at inputs[1].shape[1].x.y...y (y 28 times)"));
    // shallow nesting names each step; the top level is named as such
    write_bytes(c.dir / "top.json", std::string(40, '[') + std::string(40, ']'));
    r = run_tapegrad({"explain", c.dir / "top.json"}, c.dir);
    CHECK_THAT(r.err, Catch::Contains("at [0]...[0] ([0] 33 times)"));
    // the bench's shapes file is read the same way
    std::string shapes = R"({"shapes": [{"name": "a"}, {"name": "b", "input": [1, 2, )";
    for (int i = 0; i < 40; ++i) shapes += "[3, ";
    shapes += "4" + std::string(40, ']') + "]}]}";
    write_bytes(c.dir / "shapes.json", shapes);
    r = run_tapegrad({"bench", "--shapes", c.dir / "shapes.json"}, c.dir);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("--shapes") && Catch::Contains("at shapes[1].input[2][1]...[1][0] ([1] 28 times)"));
    // a 5 MB op name is cut, not echoed
    std::string big = R"({"op": ")";  // appended piecewise: GCC 12 warns (-Warray-bounds, a false positive) on "literal" + string
    big.append(5 << 20, 'X');
    big += R"(", "inputs": ["data.npy", "filter.npy"], "output": "o.npy"})";
    write_bytes(c.dir / "big.json", big);
    r = run_tapegrad({"run", c.dir / "big.json"}, c.dir);
    CHECK(one_error_line(r));
    CHECK(r.err.size() < 4000);
    CHECK_THAT(r.err, Catch::Contains("bytes cut"));
    // 2^64 - 1 is reported as written, not as -1
    r = c.run(R"("output": "o.npy")");
    REQUIRE(r.exit_code == 0);
    write_bytes(c.dir / "huge.json", R"({"op": "ConvolutionBackpropData", "attrs": {"strides": [18446744073709551615]},
        "inputs": ["data.npy", "filter.npy"], "output": "o2.npy"})");
    r = run_tapegrad({"run", c.dir / "huge.json"}, c.dir);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("18446744073709551615") && Catch::Contains("strides"));
}

TEST_CASE("cli limits: the work limit and the memory limit refuse absurd cases at once", "[cli][files]") {
    CaseFiles c;
    CommandResult r = c.run(R"("output": "o.npy")", {"--work-limit", "5"});  // the case is 9 multiply-adds
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("work limit of 5"));
    // pads of 2^19 - 1 on both sides of a tiny 1-D convolution: ~1e6 outputs, fine by work...
    write_bytes(c.dir / "pads.json", R"({"op": "Convolution", "attrs": {"strides": [1], "pads_begin": [524287],
        "pads_end": [524287], "dilations": [1]}, "inputs": ["data.npy", "filter.npy"], "output": "p.npy"})");
    r = run_tapegrad({"run", c.dir / "pads.json", "--memory-limit", "1M"}, c.dir);
    CHECK(one_error_line(r));  // ... but its 4 MB result is over a 1 MiB memory limit
    CHECK_THAT(r.err, Catch::Contains("memory limit"));
    r = run_tapegrad({"run", c.dir / "pads.json", "--memory-limit", "lots"}, c.dir);
    CHECK_THAT(r.err, Catch::Contains("--memory-limit 'lots'"));
    r = run_tapegrad({"run", "--frobnicate", c.dir / "pads.json"}, c.dir);
    CHECK_THAT(r.err, Catch::Contains("unknown option '--frobnicate'"));
    // gradcheck applies the same limit
    r = run_tapegrad({"gradcheck", c.dir / "case.json", "--work-limit", "1000"}, c.dir);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("work limit"));
    // ... counting the passes over its result, not only multiply-adds: pads of 2^22 − 1 make
    // ~8.4e6 mostly zero outputs from ~2.5e7 multiply-adds, which thousands of gradcheck runs
    // would fill for minutes (it ran before: only the multiply-adds were counted)
    write_bytes(c.dir / "padded.json", R"({"op": "Convolution", "attrs": {"strides": [1], "pads_begin": [4194303],
        "pads_end": [4194303], "dilations": [1]}, "inputs": ["data.npy", "filter.npy"], "output": "p.npy"})");
    r = run_tapegrad({"gradcheck", c.dir / "padded.json"}, c.dir);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("elements), over the work limit"));
}
