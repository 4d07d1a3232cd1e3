// One option parser for every program (cli/options.hpp, CLI11): both spellings of a value,
// range errors naming the option, unknown options and commands answered with the nearest
// valid name; in process, through `tapegrad`, and through the trainers.
#include <catch2/catch.hpp>

#include "cli/options.hpp"
#include "support_files.hpp"
#include "tapegrad/core/npy.hpp"

using namespace tg;
using namespace tg::testsov;

namespace {

// Parses `args` (after a program name) into an app with --count (1..10) and --name.
struct Parsed {
    int count = 3;
    std::string name = "x";
    bool went_on = false;
};
Parsed parse(std::vector<std::string> args) {
    Parsed p;
    cli::Parser cl("prog", "a test program");
    cl.option("--count", p.count, "a count", 1, 10);
    cl.option("--name", p.name, "a name", {"x", "y"});
    args.insert(args.begin(), "prog");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    p.went_on = cl.parse(static_cast<int>(argv.size()), argv.data());
    return p;
}

}  // namespace

TEST_CASE("cli options: edit distance and the nearest name, by hand", "[cli][options]") {
    CHECK(cli::edit_distance("kitten", "sitting") == 3);
    CHECK(cli::edit_distance("", "abc") == 3);
    CHECK(cli::edit_distance("--epoch", "--epochs") == 1);
    const std::vector<std::string> names{"--epochs", "--batch", "--threads", "--out"};
    CHECK(cli::nearest("--epoch", names) == "--epochs");
    CHECK(cli::nearest("--thread", names) == "--threads");
    CHECK(cli::nearest("--bat", names) == "--batch");   // the start of a name
    CHECK(cli::nearest("--outt", names) == "--out");
    CHECK(cli::nearest("--frobnicate", names).empty());  // nothing close
    CHECK(cli::nearest("rnu", {"run", "explain", "gradcheck", "bench"}) == "run");
}

TEST_CASE("cli options: --opt value and --opt=value, ranges and unknown names", "[cli][options]") {
    CHECK(parse({"--count", "7"}).count == 7);
    CHECK(parse({"--count=7"}).count == 7);
    CHECK(parse({"--name=y", "--count", "10"}).name == "y");
    CHECK(parse({}).count == 3);
    CHECK_THROWS_WITH(parse({"--count", "0"}), Catch::StartsWith("--count: '0' must be from 1 to 10"));
    CHECK_THROWS_WITH(parse({"--count=11"}), Catch::Contains("'11' must be from 1 to 10"));
    CHECK_THROWS_WITH(parse({"--count", "2x"}), Catch::Contains("--count: '2x' is not an integer"));
    CHECK_THROWS_WITH(parse({"--count", "99999999999999999999"}), Catch::Contains("must be from 1 to 10"));
    CHECK_THROWS_WITH(parse({"--count"}), Catch::Contains("--count") && Catch::Contains("prog --help"));
    CHECK_THROWS_WITH(parse({"--name", "z"}), Catch::Contains("--name: 'z' is not one of x|y"));
    CHECK_THROWS_WITH(parse({"--cont", "3"}), Catch::Contains("unknown option '--cont' (did you mean --count?)"));
    CHECK_THROWS_WITH(parse({"--cont=3"}), Catch::Contains("unknown option '--cont' (did you mean --count?)"));
    CHECK_THROWS_WITH(parse({"--zzzzzz"}), Catch::Contains("unknown option '--zzzzzz'; prog --help"));
    CHECK_THROWS_WITH(parse({"stray"}), Catch::Contains("unexpected argument 'stray'"));
    CHECK(!parse({"--help"}).went_on);  // printed the help: the program exits 0
}

TEST_CASE("cli options: tapegrad's commands take both spellings and name their mistakes", "[cli][options]") {
    TempDir dir;
    write_npy(dir / "data.npy", Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f32));
    write_npy(dir / "filter.npy", Tensor::from({1, 1, 3}, {1, 2, 3}, DType::f32));
    write_bytes(dir / "case.json", R"({"op": "ConvolutionBackpropData", "attrs": {"strides": [2]},
        "inputs": ["data.npy", "filter.npy"], "output": "out.npy"})");
    const std::string c = dir / "case.json";
    for (const std::vector<std::string>& args : {std::vector<std::string>{"run", c, "--work-limit", "5"},
                                                 std::vector<std::string>{"run", "--work-limit=5", c}}) {
        const CommandResult r = run_tapegrad(args, dir);
        CHECK(one_error_line(r));
        CHECK_THAT(r.err, Catch::Contains("work limit of 5"));
    }
    CHECK(run_tapegrad({"run", c, "--work-limit=1000"}, dir).exit_code == 0);
    CommandResult r = run_tapegrad({"rnu", c}, dir);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("unknown command 'rnu' (did you mean run?)"));
    r = run_tapegrad({"explain", c, "--work-limt", "5"}, dir);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("unknown option '--work-limt' (did you mean --work-limit?); tapegrad explain --help"));
    r = run_tapegrad({"run", c, c}, dir);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("unexpected argument"));
    r = run_tapegrad({}, dir);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("expected a command: run, explain, gradcheck or bench"));
    r = run_tapegrad({"run"}, dir);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("CASE is required"));
    r = run_tapegrad({"gradcheck", "--help"}, dir);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("tapegrad gradcheck") && Catch::Contains("--work-limit"));
}

#ifdef TAPEGRAD_EXAMPLE_DIR
TEST_CASE("cli options: the trainers and lessons share the parser", "[cli][options][examples]") {
    const std::string dir = TAPEGRAD_EXAMPLE_DIR;
    TempDir scratch;
    CommandResult r = run_program(dir + "/fashion_classifier", {"--epoch", "2"}, scratch);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("unknown option '--epoch' (did you mean --epochs?); fashion_classifier --help"));
    r = run_program(dir + "/fashion_autoencoder", {"--epochs=0"}, scratch);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("--epochs: '0' must be from 1 to 100000"));
    r = run_program(dir + "/fashion_classifier", {"--dropout=1.5"}, scratch);
    CHECK_THAT(r.err, Catch::Contains("--dropout: '1.5' must be from 0 to 1"));
    r = run_program(dir + "/fashion_autoencoder", {"--dropout", "0.5"}, scratch);  // the autoencoder has none
    CHECK_THAT(r.err, Catch::Contains("unknown option '--dropout'"));
    r = run_program(dir + "/fashion_classifier", {"--help"}, scratch);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("--epochs") && Catch::Contains("--resume") && Catch::Contains("--distributed"));
    r = run_program(dir + "/dcgan_block", {"--outt", "x"}, scratch);
    CHECK(one_error_line(r));
    CHECK_THAT(r.err, Catch::Contains("(did you mean --out?)"));
}
#endif
