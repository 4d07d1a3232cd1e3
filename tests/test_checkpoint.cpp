// Crash-safe checkpoints (tapegrad/nn/checkpoint.hpp): the on-disk format, checksums and fallback
// to the previous generation, optimizer state for exact resumption, and saves killed at
// every step (in a forked child) leaving a whole checkpoint behind.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include "tensor_helpers.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/core/factories.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/nn/checkpoint.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/optim.hpp"

using namespace tg;
using testing::same_bits;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
    const fs::path d = fs::temp_directory_path() / ("tapegrad_test_ckpt_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(d);
    return d;
}

std::vector<fs::path> generations(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().starts_with("gen-")) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

std::string slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& p, const std::string& bytes) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The same keys, each the same bits, or undefined in both.
bool same_dict(const nn::StateDict& a, const nn::StateDict& b) {
    if (a.keys() != b.keys()) return false;
    for (const auto& [k, t] : a)
        if (t.defined() != b.at(k).defined() || (t.defined() && !same_bits(t, b.at(k)))) return false;
    return true;
}

// A small model with a nested name, a buffer-free Linear and a conv, trained a few steps.
struct Net : nn::Module {
    std::shared_ptr<nn::Sequential> body;
    Net() {
        body = register_module("body", nn::Sequential{nn::Conv(1, 2, nn::ConvOptions{3}.padding(1)), nn::ReLU(),
                                                      nn::Flatten(), nn::Linear(2 * 6, 3)});
    }
    ag::Variable forward(const ag::Variable& x) override { return body->forward(x); }
};

void train(Net& net, nn::Optimizer& opt, int steps, std::uint64_t seed) {
    Generator gen(seed);
    const Tensor x = tg::randn({4, 1, 6}, gen, DType::f32), y = tg::randn({4, 3}, gen, DType::f32);
    for (int i = 0; i < steps; ++i) {
        const ag::Variable loss = ag::mse_loss(net(ag::constant(x)), ag::constant(y));
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
}

// The state a checkpoint of (net, opt) holds, as fresh copies.
nn::StateDict snapshot(const Net& net, const nn::Optimizer& opt) {
    nn::StateDict d;
    for (const auto& [k, t] : net.state_dict()) d.insert("model." + k, t.clone());
    for (const auto& [k, t] : opt.state_dict()) d.insert("optimizer." + k, t.clone());
    return d;
}

}  // namespace

TEST_CASE("Checkpoint format: generations, manifest, module and optimizer round trip", "[checkpoint]") {
    const fs::path dir = fresh_dir("format");
    tg::manual_seed(11);
    Net a;
    nn::Adam opt(a.parameters(), 1e-2);
    train(a, opt, 3, 5);
    nn::save_checkpoint(a, opt, dir.string(), {{"epoch", "3"}, {"note", "any text, with spaces: ok"}});

    auto gens = generations(dir);
    REQUIRE(gens.size() == 1);
    CHECK(gens[0].filename() == "gen-00000001");
    const std::string manifest = slurp(gens[0] / "MANIFEST");
    CHECK(manifest.starts_with("tapegrad-checkpoint 1\n"));
    CHECK(manifest.find("info epoch 3\n") != std::string::npos);
    CHECK(manifest.find("info optimizer Adam\n") != std::string::npos);
    CHECK(manifest.find("entry model.body.0.weight model.body.0.weight.npy ") != std::string::npos);
    CHECK(manifest.find(" f32 [2,1,3]\n") != std::string::npos);
    CHECK(manifest.find("entry optimizer.step optimizer.step.npy ") != std::string::npos);
    CHECK(fs::exists(gens[0] / "optimizer.m.0.npy"));

    Net b;
    nn::Adam opt_b(b.parameters(), 0.5);
    const nn::LoadedCheckpoint c = nn::load_checkpoint(b, opt_b, dir.string());
    CHECK(c.info.at("epoch") == "3");
    CHECK(c.info.at("note") == "any text, with spaces: ok");
    CHECK(c.skipped.empty());
    CHECK(same_dict(snapshot(a, opt), snapshot(b, opt_b)));
    CHECK(opt_b.steps() == 3);

    // More saves: at most the current and the previous generation stay.
    train(a, opt, 1, 5);
    nn::save_checkpoint(a, opt, dir.string());
    train(a, opt, 1, 5);
    nn::save_checkpoint(a, opt, dir.string());
    gens = generations(dir);
    REQUIRE(gens.size() == 2);
    CHECK(gens[0].filename() == "gen-00000002");
    CHECK(gens[1].filename() == "gen-00000003");
    nn::load_checkpoint(b, opt_b, dir.string());
    CHECK(same_dict(snapshot(a, opt), snapshot(b, opt_b)));

    // The module alone, and the other optimizer kind refused.
    Net m;
    nn::load_checkpoint(m, dir.string());
    CHECK(same_dict(m.state_dict(), b.state_dict()));
    nn::SGD sgd(m.parameters(), 0.1, 0.9);
    try {
        nn::load_checkpoint(m, sgd, dir.string());
        FAIL("loaded Adam state into SGD");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("kind Adam, not SGD") != std::string::npos);
    }
    fs::remove_all(dir);
}

TEST_CASE("Checkpoint entry names, dtypes and info are kept exactly", "[checkpoint]") {
    const fs::path dir = fresh_dir("names");
    nn::CheckpointData d;
    d.tensors.insert("plain", Tensor::from({2}, {1.5, -2}, DType::f64));
    d.tensors.insert("with space/and%slash", Tensor::from({1, 2}, {3, 4}, DType::f32));
    d.tensors.insert(".hidden", Tensor::from(Shape{}, {7}, DType::f16));
    d.tensors.insert("b16", Tensor::from({3}, {1, 0.5, -0.25}, DType::bf16));
    d.tensors.insert("ints", Tensor::from({2}, {5, -6}, DType::i64));
    d.tensors.insert(std::string(300, 'x'), Tensor::from({1}, {1}, DType::i32));
    d.info["rng"] = "1 2 3 4";
    nn::write_checkpoint(dir.string(), d);
    const nn::LoadedCheckpoint c = nn::read_checkpoint(dir.string());
    CHECK(same_dict(c.tensors, d.tensors));
    CHECK(c.info == d.info);
    CHECK(c.tensors.at("b16").dtype() == DType::bf16);
    const auto gens = generations(dir);
    CHECK(fs::exists(gens[0] / "with%20space%2Fand%25slash.npy"));
    CHECK(fs::exists(gens[0] / "%2Ehidden.npy"));

    nn::CheckpointData bad;
    bad.info["bad key"] = "v";
    CHECK_THROWS_AS(nn::write_checkpoint(dir.string(), bad), Error);
    bad.info.clear();
    bad.info["k"] = "two\nlines";
    CHECK_THROWS_AS(nn::write_checkpoint(dir.string(), bad), Error);
    fs::remove_all(dir);
}

TEST_CASE("Damaged checkpoint files are refused by name, and loading falls back", "[checkpoint]") {
    const fs::path dir = fresh_dir("damage");
    tg::manual_seed(12);
    Net net;
    nn::SGD opt(net.parameters(), 0.05, 0.9);
    train(net, opt, 2, 7);
    nn::save_checkpoint(net, opt, dir.string(), {{"epoch", "1"}});
    const nn::StateDict first = snapshot(net, opt);
    train(net, opt, 2, 7);
    nn::save_checkpoint(net, opt, dir.string(), {{"epoch", "2"}});
    const nn::StateDict second = snapshot(net, opt);
    REQUIRE_FALSE(same_dict(first, second));
    const fs::path newest = generations(dir).back(), older = generations(dir).front();
    const std::string w = "model.body.3.weight.npy";

    // Each damage to the newest generation: the error names the file, and the older one loads.
    struct Damage {
        const char* what;
        std::string file;  // the file the message must name
        void (*apply)(const fs::path& gen, const std::string& file);
    };
    const std::vector<Damage> damages = {
        {"flipped payload byte", w,
         [](const fs::path& g, const std::string& f) {
             std::string b = slurp(g / f);
             b[b.size() - 3] ^= 0x10;
             spit(g / f, b);
         }},
        {"flipped header byte", w,
         [](const fs::path& g, const std::string& f) {
             std::string b = slurp(g / f);
             b[20] ^= 0x01;
             spit(g / f, b);
         }},
        {"truncated", w,
         [](const fs::path& g, const std::string& f) {
             const std::string b = slurp(g / f);
             spit(g / f, b.substr(0, b.size() - 4));
         }},
        {"missing", w, [](const fs::path& g, const std::string& f) { fs::remove(g / f); }},
        {"extra", "stray.npy", [](const fs::path& g, const std::string&) { spit(g / "stray.npy", "x"); }},
        {"swapped", "model.body.0.bias.npy",
         [](const fs::path& g, const std::string&) {
             // two entries of one shape and dtype exchanged: only the CRC can tell
             const std::string a = slurp(g / "model.body.0.bias.npy"), b = slurp(g / "optimizer.velocity.1.npy");
             REQUIRE(a.size() == b.size());
             spit(g / "model.body.0.bias.npy", b);
             spit(g / "optimizer.velocity.1.npy", a);
         }},
        {"manifest flipped", "MANIFEST",
         [](const fs::path& g, const std::string&) {
             std::string b = slurp(g / "MANIFEST");
             b[b.find("info epoch 2") + 11] = '7';
             spit(g / "MANIFEST", b);
         }},
        {"manifest truncated", "MANIFEST",
         [](const fs::path& g, const std::string&) {
             const std::string b = slurp(g / "MANIFEST");
             spit(g / "MANIFEST", b.substr(0, b.size() / 2));
         }},
        {"manifest of another version", "MANIFEST",
         [](const fs::path& g, const std::string&) {
             std::string b = slurp(g / "MANIFEST");
             b[std::string("tapegrad-checkpoint ").size()] = '9';
             spit(g / "MANIFEST", b);
         }},
    };
    const fs::path backup = dir.string() + ".backup";
    fs::remove_all(backup);
    fs::copy(newest, backup, fs::copy_options::recursive);
    for (const Damage& d : damages) {
        INFO(d.what);
        fs::remove_all(newest);
        fs::copy(backup, newest, fs::copy_options::recursive);
        REQUIRE(nn::read_checkpoint(dir.string()).info.at("epoch") == "2");
        d.apply(newest, d.file);

        Net got;
        nn::SGD got_opt(got.parameters(), 0.1);
        const nn::LoadedCheckpoint c = nn::load_checkpoint(got, got_opt, dir.string());
        CHECK(c.info.at("epoch") == "1");
        CHECK(c.generation == older.string());
        REQUIRE(c.skipped.size() == 1);
        CHECK(c.skipped[0].find("gen-00000002") != std::string::npos);
        CHECK(c.skipped[0].find(d.file == "MANIFEST" ? std::string("MANIFEST") : "'" + d.file + "'") != std::string::npos);
        CHECK(same_dict(snapshot(got, got_opt), first));

        // Without the previous generation: an error naming the file, and nothing changed.
        const fs::path older_backup = dir.string() + ".older";
        fs::remove_all(older_backup);
        fs::rename(older, older_backup);
        Net untouched;
        const nn::StateDict before = untouched.state_dict().clone();
        try {
            nn::load_checkpoint(untouched, dir.string());
            FAIL("loaded a damaged checkpoint");
        } catch (const Error& e) {
            CHECK(std::string(e.what()).find(d.file) != std::string::npos);
            CHECK(std::string(e.what()).find("no loadable checkpoint") != std::string::npos);
        }
        CHECK(same_dict(untouched.state_dict(), before));
        fs::rename(older_backup, older);
    }
    fs::remove_all(backup);

    // An interrupted save (a generation without MANIFEST) is skipped, then cleared by the next save.
    fs::remove_all(newest);
    fs::copy(older, dir / "gen-00000003", fs::copy_options::recursive);
    fs::remove(dir / "gen-00000003" / "MANIFEST");
    CHECK(nn::read_checkpoint(dir.string()).generation == older.string());
    nn::save_checkpoint(net, opt, dir.string(), {{"epoch", "3"}});
    const auto gens = generations(dir);
    REQUIRE(gens.size() == 2);
    CHECK(gens[0] == older);
    CHECK(gens[1].filename() == "gen-00000004");
    CHECK_THROWS_AS(nn::read_checkpoint((dir / "nothing").string()), Error);
    fs::remove_all(dir);
}

TEST_CASE("Optimizer state dictionaries resume training bit for bit", "[checkpoint]") {
    for (int kind = 0; kind < 2; ++kind) {
        INFO((kind ? "Adam" : "SGD"));
        const fs::path dir = fresh_dir(kind ? "resume_adam" : "resume_sgd");
        auto make = [&](Net& n) -> std::unique_ptr<nn::Optimizer> {
            if (kind) return std::make_unique<nn::Adam>(n.parameters(), 3e-3, 0.8, 0.99, 1e-6, 1e-3);
            return std::make_unique<nn::SGD>(n.parameters(), 0.05, 0.9, 1e-3);
        };
        tg::manual_seed(21);
        Net a;
        auto opt_a = make(a);
        train(a, *opt_a, 3, 9);
        nn::save_checkpoint(a, *opt_a, dir.string());
        train(a, *opt_a, 4, 9);

        tg::manual_seed(99);
        Net b;
        auto opt_b = make(b);  // other weights, fresh state
        nn::load_checkpoint(b, *opt_b, dir.string());
        train(b, *opt_b, 4, 9);
        CHECK(same_dict(snapshot(a, *opt_a), snapshot(b, *opt_b)));

        // load_state_dict checks everything first
        nn::StateDict s = opt_a->state_dict();
        const nn::StateDict good = opt_b->state_dict();
        s.set("lr", Tensor::from(Shape{}, {-1}, DType::f64));
        CHECK_THROWS_AS(opt_b->load_state_dict(s), Error);
        s = opt_a->state_dict();
        const std::string state = kind ? "m.0" : "velocity.0";
        s.set(state, Tensor::zeros({5}, DType::f32));
        CHECK_THROWS_AS(opt_b->load_state_dict(s), Error);
        s = opt_a->state_dict();
        s.insert(kind ? "m.99" : "velocity.99", Tensor::zeros({1}, DType::f32));
        CHECK_THROWS_AS(opt_b->load_state_dict(s), Error);
        s = opt_a->state_dict();
        s.erase("step");
        CHECK_THROWS_AS(opt_b->load_state_dict(s), Error);
        CHECK(same_dict(opt_b->state_dict(), good));
        fs::remove_all(dir);
    }
}

TEST_CASE("A save killed at any step leaves the previous or the new checkpoint whole", "[checkpoint]") {
    const fs::path dir = fresh_dir("kill");
    tg::manual_seed(31);
    Net net;
    nn::Adam opt(net.parameters(), 1e-2);
    train(net, opt, 1, 3);
    const nn::StateDict s1 = snapshot(net, opt);
    train(net, opt, 1, 3);
    const nn::StateDict s2 = snapshot(net, opt);
    train(net, opt, 1, 3);
    const nn::StateDict s3 = snapshot(net, opt);

    auto set_state = [&](const nn::StateDict& s) {
        nn::StateDict model, optim;
        for (const auto& [k, t] : s) {
            if (k.starts_with("model.")) model.insert(k.substr(6), t);
            else optim.insert(k.substr(10), t);
        }
        net.load_state_dict(model);
        opt.load_state_dict(optim);
    };
    // Saves state s with fault k in a child process; true when the child was killed.
    auto save_in_child = [&](const nn::StateDict& s, int k, const std::string& tag) {
        set_state(s);
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            nn::detail::set_checkpoint_fault(k);
            try {
                nn::save_checkpoint(net, opt, dir.string(), {{"tag", tag}});
            } catch (...) {
                ::_exit(3);
            }
            ::_exit(0);
        }
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        if (WIFEXITED(status)) {
            REQUIRE(WEXITSTATUS(status) == 0);
            return false;
        }
        REQUIRE(WIFSIGNALED(status));
        REQUIRE(WTERMSIG(status) == SIGKILL);
        return true;
    };
    // What loads must be one of the states saved, whole and bit-exact, with its tag.
    auto loads_one_of = [&](std::vector<std::pair<std::string, const nn::StateDict*>> allowed) {
        Net got;
        nn::Adam got_opt(got.parameters());
        const nn::LoadedCheckpoint c = nn::load_checkpoint(got, got_opt, dir.string());
        const nn::StateDict s = snapshot(got, got_opt);
        for (const auto& [tag, want] : allowed)
            if (c.info.at("tag") == tag) return same_dict(s, *want);
        return false;
    };

    // How many steps a save of this model passes (the first save into a folder).
    set_state(s1);
    nn::save_checkpoint(net, opt, (dir.string() + "_count"), {{"tag", "x"}});
    nn::save_checkpoint(net, opt, (dir.string() + "_count"), {{"tag", "x"}});
    nn::save_checkpoint(net, opt, (dir.string() + "_count"), {{"tag", "x"}});  // with a pruned generation
    const int K = nn::detail::checkpoint_fault_steps();
    fs::remove_all(dir.string() + "_count");
    CHECK(K > 2 * static_cast<int>(s1.size()) + 4);

    int killed = 0;
    for (int k = 0; k <= K; ++k) {
        INFO("first save killed at step " << k);
        fs::remove_all(dir);
        set_state(s1);
        nn::save_checkpoint(net, opt, dir.string(), {{"tag", "s1"}});
        const bool was_killed = save_in_child(s2, k, "s2");
        CHECK(was_killed == (k < K - 1));  // this save prunes nothing: one step fewer
        killed += was_killed;
        CHECK(loads_one_of({{"s1", &s1}, {"s2", &s2}}));
        // a second kill, during the next save, at a step that varies with k
        const int k2 = (k * 7 + 3) % (K + 1);
        INFO("second save killed at step " << k2);
        save_in_child(s3, k2, "s3");
        CHECK(loads_one_of({{"s1", &s1}, {"s2", &s2}, {"s3", &s3}}));
        CHECK(generations(dir).size() <= 3);
    }
    CHECK(killed == K - 1);
    fs::remove_all(dir);
}
