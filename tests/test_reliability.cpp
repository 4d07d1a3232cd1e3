// Reliability, round 3 (issue 21): each class that crashed or answered wrongly, checked at its
// root. Environment settings are read on first use with errors naming the variable; thread
// counts are bounded; optimizer state follows its parameter's shape; a parameter reached
// twice is updated once; a module cannot contain itself; relu passes NaN; slice takes any step.
#include <catch2/catch.hpp>

#include <filesystem>

#include <sys/stat.h>

#include "support_files.hpp"
#include "tapegrad/data/image.hpp"
#include "tapegrad/core/env.hpp"
#include "tapegrad/tapegrad.hpp"

using namespace tg;
using namespace tg::testsov;

TEST_CASE("an invalid conv setting is an error where a conv runs, not an abort before main", "[reliability]") {
    const std::vector<std::pair<std::string, std::string>> settings = {
        {"TAPEGRAD_TRANSPOSED=bogus", "TAPEGRAD_TRANSPOSED='bogus' must be auto, col2im or phases"},
        {"TAPEGRAD_SMALL_CONV=bogus", "TAPEGRAD_SMALL_CONV='bogus' must be auto, never, always or rows"}};
    for (const auto& [env, message] : settings) {
        INFO(env);
        TempDir scratch;
        // --help runs no convolution: it must work whatever the setting (it aborted with 134).
        const CommandResult help = run_tapegrad({"--help"}, scratch, {env});
        CHECK(help.exit_code == 0);
        const std::filesystem::path ex = std::filesystem::path(TAPEGRAD_SOURCE_DIR) / "examples" / "cases" / "ex1_full";
        TempDir work;
        for (const char* f : {"case.json", "data.npy", "filter.npy"}) std::filesystem::copy_file(ex / f, work / f);
        const CommandResult r = run_tapegrad({"run", work / "case.json"}, scratch, {env});
        INFO(r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.rfind("error: ", 0) == 0);
        CHECK_THAT(r.err, Catch::Contains(message));
    }
}

TEST_CASE("thread counts are bounded with an error naming the setting", "[reliability]") {
    CHECK_THROWS_WITH(set_num_threads(100000), Catch::Contains("set_num_threads: thread count 100000 is not in 1..256"));
    CHECK_THROWS_WITH(set_num_threads(0), Catch::Contains("is not in 1..256"));
    TempDir scratch;
    const CommandResult b = run_tapegrad({"bench", "--threads", "100000"}, scratch);
    CHECK(b.exit_code == 1);
    CHECK_THAT(b.err, Catch::StartsWith("error: ") && Catch::Contains("--threads: '100000' must be from 1 to 256; tapegrad bench --help"));
    const std::filesystem::path ex = std::filesystem::path(TAPEGRAD_SOURCE_DIR) / "examples" / "cases" / "ex1_full";
    TempDir work;
    for (const char* f : {"case.json", "data.npy", "filter.npy"}) std::filesystem::copy_file(ex / f, work / f);
    for (const char* bad : {"TAPEGRAD_NUM_THREADS=100000", "TAPEGRAD_NUM_THREADS=two", "TAPEGRAD_NUM_THREADS=0"}) {
        INFO(bad);
        const CommandResult r = run_tapegrad({"run", work / "case.json"}, scratch, {bad});
        CHECK(r.exit_code == 1);
        CHECK_THAT(r.err, Catch::StartsWith("error: ") && Catch::Contains("is not an integer in 1..256"));
    }
}

TEST_CASE("optimizer state is checked against its parameter's shape after set_data", "[reliability]") {
    ag::Variable w = ag::param(Tensor::full({4, 3}, 1.0));
    nn::Adam adam({w}, 0.1);
    nn::SGD sgd({w}, 0.1, 0.9);
    w.set_grad(Tensor::full({4, 3}, 1.0));
    adam.step();
    sgd.step();
    w.set_data(Tensor::full({2, 3}, 1.0));  // shrunk: the moments still have 12 elements
    w.set_grad(Tensor::full({2, 3}, 1.0));
    CHECK_THROWS_WITH(adam.step(), Catch::Contains("Adam: parameter 0 now has shape [2, 3] but its optimizer state was made for [4, 3]"));
    CHECK_THROWS_WITH(sgd.step(), Catch::Contains("SGD: parameter 0 now has shape [2, 3]"));
    CHECK_THROWS_WITH(adam.state_dict(), Catch::Contains("Adam: parameter 0 now has shape [2, 3]"));  // never an unloadable save
}

TEST_CASE("a parameter reached twice (tied weights, passed twice) is updated once per step", "[reliability]") {
    auto shared = std::make_shared<nn::Linear>(2, 2, false);
    nn::Sequential net;
    net.add(shared).add(shared);  // the same layer twice
    CHECK(net.parameters().size() == 1);
    CHECK(net.named_parameters()[0].first == "0.weight");
    const Tensor before = shared->weight.value().clone();
    nn::SGD opt({shared->weight, shared->weight}, 1.0);  // and passed twice
    CHECK(opt.params().size() == 1);
    shared->weight.set_grad(Tensor::full({2, 2}, 1.0));
    opt.step();
    CHECK(shared->weight.value().values() == sub(before, 1.0).values());  // one step of lr·g, not two
}

TEST_CASE("a module cannot be added to itself or to one of its descendants", "[reliability]") {
    auto a = std::make_shared<nn::Sequential>();
    CHECK_THROWS_WITH(a->add(a), Catch::Contains("register_module: module '0' is this module itself"));
    auto b = std::make_shared<nn::Sequential>();
    a->add(b);
    CHECK_THROWS_WITH(b->add(a), Catch::Contains("is an ancestor of this module"));
    CHECK(a->parameters().empty());  // still a tree: the walk ends
}

TEST_CASE("relu passes NaN and its gradient is 1 there, as PyTorch's", "[reliability]") {
    const ag::Variable x = ag::param(Tensor::from({3}, {NAN, -1.0, 2.0}));
    const ag::Variable y = ag::relu(x);
    CHECK(std::isnan(y.value().values()[0]));
    ag::backward({y}, {Tensor::full({3}, 1.0)});
    CHECK(x.grad().values() == std::vector<double>{1, 0, 1});
}

#ifdef TAPEGRAD_EXAMPLE_DIR
namespace {

// An IDX file of unsigned bytes (plain: the reader's gzip layer reads plain files too).
void write_idx(const std::filesystem::path& p, std::vector<std::int64_t> dims) {
    std::string b{'\0', '\0', '\x08', static_cast<char>(dims.size())};
    std::int64_t n = 1;
    for (std::int64_t d : dims) {
        n *= d;
        for (int s = 24; s >= 0; s -= 8) b += static_cast<char>((d >> s) & 0xff);
    }
    b += std::string(static_cast<std::size_t>(n), '\x03');
    write_bytes(p, b);
}

void write_dataset(const std::filesystem::path& dir, std::int64_t n_train, std::int64_t n_test) {
    write_idx(dir / "train-images-idx3-ubyte.gz", {n_train, 28, 28});
    write_idx(dir / "train-labels-idx1-ubyte.gz", {n_train});
    write_idx(dir / "t10k-images-idx3-ubyte.gz", {n_test, 28, 28});
    write_idx(dir / "t10k-labels-idx1-ubyte.gz", {n_test});
}

}  // namespace

TEST_CASE("the trainers refuse empty or too small datasets and an unwritable step log before training", "[reliability][examples]") {
    const std::string dir = TAPEGRAD_EXAMPLE_DIR;
    const std::string classifier = dir + "/fashion_classifier", autoencoder = dir + "/fashion_autoencoder";
    TempDir data, scratch, out;
    auto expect = [&](const std::string& exe, const std::string& message, std::vector<std::string> args) {
        args.insert(args.end(), {"--data", data.path().string(), "--threads", "1"});
        const CommandResult r = run_program(exe, args, scratch);
        INFO(exe << ": " << r.err);
        CHECK(r.exit_code == 1);
        CHECK_THAT(r.err, Catch::StartsWith("error: ") && Catch::Contains(message));
        CHECK(r.out.find("epoch 1/1") == std::string::npos);  // nothing trained
    };
    write_dataset(data.path(), 0, 20);  // no training image: 0 steps, then exit 0 before
    expect(classifier, "the training set gives no batch", {"--out", out / "a"});
    write_dataset(data.path(), 64, 0);  // no test image: test_accuracy=-nan before
    expect(classifier, "the test set is empty", {"--out", out / "b"});
    write_dataset(data.path(), 64, 10);  // the picture needs 16: trained fully, then failed before
    expect(autoencoder, "the test set has 10 images, fewer than the 16 it draws", {"--out", out / "c"});
    write_dataset(data.path(), 64, 20);
    std::filesystem::create_directories(std::filesystem::path(out / "d") / "fashion_classifier_steps.csv");  // cannot be created as a file
    expect(classifier, "cannot write the step log", {"--out", out / "d"});
}
#endif

TEST_CASE("more spatial axes than the kernels support are refused where a geometry is made", "[reliability]") {
    const std::int64_t D = kMaxSpatialAxes + 1;
    ConvParams p;
    p.C_in = 1;
    p.C_out = 1;
    p.in_size = Shape(static_cast<std::size_t>(D), 1);
    p.kernel = Shape(static_cast<std::size_t>(D), 1);
    CHECK_THROWS_WITH(ConvGeometry::forward(p), Catch::Contains("the kernel has 13 spatial axes, at most 12 are supported"));
    // bench read 13 to 16 axes from a shape file, then failed every op
    TempDir dir;
    const std::string ones = "[1,1,1,1,1,1,1,1,1,1,1,1,1]", zeros = "[0,0,0,0,0,0,0,0,0,0,0,0,0]";
    write_bytes(dir / "shapes.json", R"({"shapes": [{"name": "d13", "dims": 13, "N": 1, "C_in": 1, "C_out": 1, "groups": 1,
        "input": )" + ones + R"(, "kernel": )" + ones + R"(, "strides": )" + ones + R"(, "pads_begin": )" + zeros +
                                         R"(, "pads_end": )" + zeros + R"(, "dilations": )" + ones + R"(, "output_padding": )" +
                                         zeros + "}]}");
    const CommandResult r = run_tapegrad({"bench", "--shapes", dir / "shapes.json"}, dir);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith("error: ") && Catch::Contains("more spatial axes than the kernels support (12)"));
}

TEST_CASE(".npy and PNG outputs keep the mode of the file they replace, and honour the umask for new files", "[reliability]") {
    TempDir dir;
    const std::string kept = dir / "kept.npy", fresh = dir / "fresh.npy", png = dir / "fresh.png";
    write_npy(kept, Tensor::zeros({2}));
    ::chmod(kept.c_str(), 0600);
    write_npy(kept, Tensor::full({2}, 1.0));  // replacing a private file must not make it world-readable (it became 0644)
    struct stat st {};
    REQUIRE(::stat(kept.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(read_npy(kept, "kept").values() == std::vector<double>{1, 1});
    const mode_t old = ::umask(027);
    write_npy(fresh, Tensor::zeros({2}));
    write_png_grid(png, Tensor::zeros({1, 4, 4}), GridOptions{1, 1, "", {}});
    ::umask(old);
    REQUIRE(::stat(fresh.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0640);
    REQUIRE(::stat(png.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0640);
}

TEST_CASE("the environment reader: unset and empty mean not given, every bad value is named", "[reliability][env]") {
    const char* name = "TAPEGRAD_TEST_SETTING";
    ::unsetenv(name);
    CHECK_FALSE(env::text(name));
    CHECK_FALSE(env::integer(name, 1, 4));
    ::setenv(name, "", 1);
    CHECK_FALSE(env::choice(name, {"a", "b"}));
    ::setenv(name, "3", 1);
    CHECK(env::integer(name, 1, 4) == 3);
    CHECK_THROWS_WITH(env::integer(name, 1, 2), "TAPEGRAD_TEST_SETTING='3' is not an integer in 1..2");
    ::setenv(name, "3x", 1);
    CHECK_THROWS_WITH(env::integer(name, 1, 4), Catch::Contains("'3x' is not an integer in 1..4"));
    ::setenv(name, "phases", 1);
    CHECK(env::choice(name, {"auto", "col2im", "phases"}) == "phases");
    ::setenv(name, "Phases", 1);
    CHECK_THROWS_WITH(env::choice(name, {"auto", "col2im", "phases"}),
                      "TAPEGRAD_TEST_SETTING='Phases' must be auto, col2im or phases");
    ::setenv(name, "512M", 1);
    CHECK(env::bytes(name) == std::int64_t{512} << 20);
    ::setenv(name, "lots", 1);
    CHECK_THROWS_WITH(env::bytes(name), Catch::Contains("'lots' is not a byte count"));
    ::setenv(name, std::string(100, '9').c_str(), 1);  // a long value is cut in the message
    CHECK_THROWS_WITH(env::integer(name, 1, 4), Catch::Contains(std::string(40, '9') + "...'"));
    ::unsetenv(name);
    // Through the command line: each setting is one error line naming it.
    TempDir scratch;
    for (const char* bad : {"TAPEGRAD_SIMD=avx1024", "TAPEGRAD_MEMORY_LIMIT=lots", "TAPEGRAD_NUM_THREADS=0"}) {
        INFO(bad);
        const CommandResult r = run_tapegrad({"bench", "--shapes", "none.json"}, scratch, {bad});
        CHECK(r.exit_code == 1);
        CHECK_THAT(r.err, Catch::StartsWith("error: ") && Catch::Contains(std::string(bad).substr(0, std::string(bad).find('='))));
    }
}
