// What the Fashion-MNIST examples share: their command line, the progress display, the
// loss history and its plot, and checkpoints that resume exactly. Header-only: every
// examples/*.cpp is its own program.
//
// Options (every example takes all of them; defaults per example; CLI11 through
// cli/options.hpp, so `--opt value` and `--opt=value`):
//   --help  --data DIR  --epochs N  --limit N  --batch N  --threads N  --seed N  --out DIR  --resume CKPT_DIR
// and, where the program says so (Program), --dropout P and --distributed (data parallelism
// over MPI: examples/distributed.hpp).
// Every file goes under --out (default out/, created when missing): the pictures, the loss
// curve, and the checkpoint folder <out>/<program>.ckpt, written after every epoch. With
// --resume DIR the run continues from the checkpoint in DIR and keeps saving there.
//
// Reproducibility: the model is initialised from --seed, epoch e's data order is a function
// of (seed, e) (tapegrad/data/loader.hpp), and the layers' own randomness (dropout) is reseeded from
// (seed, e) at the start of every epoch; so a run is a function of its options and thread
// count, and a run resumed at an epoch boundary computes bit for bit what the uninterrupted
// run computes (the checkpoint holds the model, Adam's state and the loss history).
#pragma once
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/error.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/data/image.hpp"
#include "tapegrad/data/loader.hpp"
#include "tapegrad/nn/checkpoint.hpp"

namespace tg::example {

struct Options {
    std::string data = "/usr/share/datasets/fashion-mnist";
    int epochs = 1;
    std::int64_t batch = 64;
    std::int64_t limit = 0;  // train on the first `limit` images only (0: all)
    int threads = 0;         // 0: tapegrad's default (the core count, or TAPEGRAD_NUM_THREADS)
    std::uint64_t seed = 1;
    std::string out = "out";
    std::string resume;  // a checkpoint folder to continue from
    double dropout = 0;  // --dropout, for programs that take it
    bool distributed = false;  // --distributed: one rank of an MPI run
};

// What an example says about itself in --help, and its defaults.
struct Program {
    const char* name;     // e.g. "fashion_classifier"
    const char* summary;  // one line
    int epochs;           // the default --epochs
    std::int64_t batch;   // the default --batch
    double dropout = -1;       // the default --dropout; < 0: the program has no --dropout
    bool distributed = false;  // whether it takes --distributed
};

inline Options defaults(const Program& p) {
    Options o;
    o.epochs = p.epochs;
    o.batch = p.batch;
    o.dropout = p.dropout;
    return o;
}

// The command line (cli/options.hpp: CLI11); --help prints the options and exits 0, a
// mistake throws an error naming the option.
inline Options parse_options(int argc, char** argv, const Program& p) {
    Options a = defaults(p);
    cli::Parser cl(p.name, p.summary);
    cl.option("--data", a.data, "Fashion-MNIST folder").type("DIR");
    cl.option("--epochs", a.epochs, "passes over the training images", 1, 100000);
    cl.option("--limit", a.limit, "train on the first N training images only (0: all 60000)", 0, std::int64_t{1} << 40);
    cl.option("--batch", a.batch, "images per step", 1, 1000000);
    cl.option("--threads", a.threads, "threads (default: the core count, or TAPEGRAD_NUM_THREADS)", 1, kMaxThreads).no_default();
    cl.option("--seed", a.seed, "the seed of the initial weights, the data order and dropout", 0, std::int64_t{1} << 62);
    cl.option("--out", a.out, "where every file goes: pictures, loss curve, steps.csv, checkpoints").type("DIR");
    cl.option("--resume", a.resume,
              "continue from the checkpoint folder DIR (same --data, --limit, --batch, --seed; the same --threads for "
              "bit-identical results) up to --epochs, saving there")
        .type("DIR");
    if (p.dropout >= 0) cl.option("--dropout", a.dropout, "the dropout probability", 0, 1);
    if (p.distributed)
        cl.flag("--distributed", a.distributed,
                std::string("one process of a data-parallel run (mpirun -np R ") + p.name +
                    " --distributed): trains on R shares of every batch and prints from rank 0");
    cl.footer("Same options and threads give the same numbers bit for bit. The last line on stdout is the result.");
    if (!cl.parse(argc, argv)) std::exit(0);
    if (a.threads > 0) set_num_threads(a.threads);
    std::error_code ec;
    std::filesystem::create_directories(a.out, ec);
    if (ec || !std::filesystem::is_directory(a.out))
        fail("--out", "cannot create the output folder '", a.out, "'", ec ? ": " + ec.message() : std::string());
    return a;
}

inline std::string out_path(const Options& a, const std::string& file) {
    return (std::filesystem::path(a.out) / file).string();
}

// A seed for stream `stream` of epoch `epoch` (dropout masks), distinct from the data
// order's.
inline std::uint64_t epoch_seed(std::uint64_t seed, std::int64_t epoch, std::uint64_t stream) {
    std::uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ (static_cast<std::uint64_t>(epoch) + 1) * 0xbf58476d1ce4e5b9ull ^
                      stream * 0x94d049bb133111ebull;
    x ^= x >> 31;
    x *= 0xd6e8feb86659fd93ull;
    return x ^ (x >> 32);
}

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

inline std::string clock_str(double s) {
    if (!std::isfinite(s) || s < 0) return "--:--";
    const long t = std::lround(s);
    char b[32];
    if (t >= 3600) std::snprintf(b, sizeof b, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else std::snprintf(b, sizeof b, "%ld:%02ld", t / 60, t % 60);
    return b;
}

// The progress of one epoch: on a terminal (stderr) a bar redrawn at most ten times a
// second with the running loss, images/s and the ETA; otherwise a plain line on stdout
// every `every` steps and at the last one ("epoch 1/3  step  100/938  loss 0.5123  2400 img/s
// ETA 0:21"; the loss is the mean over the steps since the previous line).
class Progress {
public:
    Progress(int epoch, int epochs, std::int64_t steps, std::int64_t every = 100)
        : epoch_(epoch), epochs_(epochs), steps_(steps), every_(every), tty_(::isatty(2) == 1) {}

    void step(double loss, std::int64_t images) {
        ++done_;
        images_ += images;
        sum_ += loss;
        ++n_;
        const double t = seconds_since(start_);
        const double rate = images_ / std::max(t, 1e-9), eta = t / done_ * (steps_ - done_);
        if (tty_) {
            if (t - drawn_ < 0.1 && done_ != steps_) return;
            drawn_ = t;
            const int width = 30, full = static_cast<int>(width * done_ / std::max<std::int64_t>(steps_, 1));
            std::fprintf(stderr, "\r\033[Kepoch %d/%d [%s%s] %lld/%lld  loss %.4f  %.0f img/s  ETA %s", epoch_, epochs_,
                         std::string(full, '#').c_str(), std::string(width - full, '.').c_str(),
                         static_cast<long long>(done_), static_cast<long long>(steps_), sum_ / n_, rate,
                         clock_str(eta).c_str());
            if (done_ == steps_) std::fputc('\n', stderr);
            std::fflush(stderr);
            sum_ = 0, n_ = 0;  // the bar shows the loss since the previous redraw
        } else if (done_ % every_ == 0 || done_ == steps_) {
            std::printf("epoch %d/%d  step %5lld/%lld  loss %.4f  %.0f img/s  ETA %s\n", epoch_, epochs_,
                        static_cast<long long>(done_), static_cast<long long>(steps_), sum_ / n_, rate,
                        clock_str(eta).c_str());
            std::fflush(stdout);
            sum_ = 0, n_ = 0;
        }
    }
    double seconds() const { return seconds_since(start_); }
    std::int64_t images() const { return images_; }

private:
    int epoch_, epochs_;
    std::int64_t steps_, every_;
    bool tty_;
    Clock::time_point start_ = Clock::now();
    std::int64_t done_ = 0, images_ = 0, n_ = 0;
    double sum_ = 0, drawn_ = -1;
};

// The loss curve: the training loss averaged over every `kTrainEvery` steps (x in epochs),
// the test loss after every epoch. Saved in the checkpoint, so a resumed run plots it all.
struct History {
    static constexpr std::int64_t kTrainEvery = 20;
    std::vector<double> train_x, train_y, test_x, test_y;

    // Text for a checkpoint info value (exact: %.17g).
    static std::string encode(const std::vector<double>& v) {
        std::string s;
        char b[40];
        for (double x : v) {
            std::snprintf(b, sizeof b, "%.17g", x);
            if (!s.empty()) s += ' ';
            s += b;
        }
        return s;
    }
    static std::vector<double> decode(const std::string& s) {
        std::vector<double> v;
        std::istringstream is(s);
        for (std::string w; is >> w;) v.push_back(std::strtod(w.c_str(), nullptr));
        return v;
    }
    void save(nn::CheckpointInfo& info) const {
        info["train_x"] = encode(train_x), info["train_y"] = encode(train_y);
        info["test_x"] = encode(test_x), info["test_y"] = encode(test_y);
    }
    void load(const nn::CheckpointInfo& info) {
        auto get = [&](const char* k) {
            const auto it = info.find(k);
            return it == info.end() ? std::vector<double>{} : decode(it->second);
        };
        train_x = get("train_x"), train_y = get("train_y"), test_x = get("test_x"), test_y = get("test_y");
    }
    // Train loss in blue, test loss in orange with markers, over epochs; `title` names the
    // run.
    void plot(const std::string& path, const std::string& title) const {
        PlotOptions o;
        o.title = title, o.x_label = "epoch", o.y_label = "loss";
        write_png_plot(path,
                       {PlotSeries{"train loss (mean of " + std::to_string(kTrainEvery) + " steps)", train_x, train_y, {31, 119, 180}, false},
                        PlotSeries{"test loss", test_x, test_y, {255, 127, 14}, true}},
                       o);
    }
};

// Collects the training loss into History every kTrainEvery steps of an epoch (and at its
// end), at x = epoch - 1 + (step + 1) / steps.
class LossRecorder {
public:
    LossRecorder(History& h, int epoch, std::int64_t steps) : h_(h), epoch_(epoch), steps_(steps) {}
    void add(std::int64_t step, double loss) {
        sum_ += loss, ++n_;
        if ((step + 1) % History::kTrainEvery == 0 || step + 1 == steps_) {
            h_.train_x.push_back(epoch_ - 1 + static_cast<double>(step + 1) / static_cast<double>(steps_));
            h_.train_y.push_back(sum_ / static_cast<double>(n_));
            sum_ = 0, n_ = 0;
        }
    }

private:
    History& h_;
    int epoch_;
    std::int64_t steps_, n_ = 0;
    double sum_ = 0;
};

// The run in a line, for the plot's title: "fashion_classifier: 3 epochs, batch 64, seed 1,
// 2 threads" (and the images when --limit cut them, the ranks when distributed).
inline std::string run_title(const Program& p, const Options& a, int world_size) {
    std::ostringstream t;
    t << p.name << ": " << a.epochs << (a.epochs == 1 ? " epoch" : " epochs") << ", batch " << a.batch;
    if (a.limit > 0) t << ", " << a.limit << " images";
    if (p.dropout >= 0) t << ", dropout " << a.dropout;
    t << ", seed " << a.seed << ", " << num_threads() << (num_threads() == 1 ? " thread" : " threads");
    if (world_size > 1) t << " x " << world_size << " ranks";
    return t.str();
}

// The checkpoint folder: <out>/<program>.ckpt, or the one being resumed.
inline std::string checkpoint_dir(const Options& a, const Program& p) {
    return a.resume.empty() ? out_path(a, std::string(p.name) + ".ckpt") : a.resume;
}

// What must match for a resumed run to continue the same computation.
inline nn::CheckpointInfo run_identity(const Options& a, std::int64_t n_train) {
    return {{"n_train", std::to_string(n_train)}, {"batch", std::to_string(a.batch)}, {"seed", std::to_string(a.seed)}};
}

inline void save(const nn::Module& model, const nn::Optimizer& opt, const std::string& dir, const Options& a,
                 std::int64_t n_train, int epoch, const History& h) {
    nn::CheckpointInfo info = run_identity(a, n_train);
    info["epoch"] = std::to_string(epoch);
    info["threads"] = std::to_string(num_threads());
    h.save(info);
    nn::save_checkpoint(model, opt, dir, info);
}

// Loads --resume (when given) and returns the epochs it completed (0 without --resume).
inline int resume(nn::Module& model, nn::Optimizer& opt, const Options& a, std::int64_t n_train, History& h) {
    if (a.resume.empty()) return 0;
    const nn::LoadedCheckpoint c = nn::load_checkpoint(model, opt, a.resume);
    for (const std::string& s : c.skipped) std::printf("warning: skipped %s\n", s.c_str());
    auto info = [&](const std::string& k) -> const std::string& {
        const auto it = c.info.find(k);
        if (it == c.info.end()) fail("--resume", "checkpoint '", a.resume, "' lacks the value '", k, "'");
        return it->second;
    };
    for (const auto& [k, v] : run_identity(a, n_train))
        if (info(k) != v)
            fail("--resume", "checkpoint '", a.resume, "' was trained with ", k, " ", info(k), ", this run has ", v,
                 " (give the same --limit, --batch and --seed)");
    if (info("threads") != std::to_string(num_threads()))
        std::printf("note: the checkpoint was trained with %s threads, this run has %d: the results will not be bit "
                    "for bit those of an uninterrupted run\n",
                    info("threads").c_str(), num_threads());
    h.load(c.info);
    int done = -1;
    const std::string& e = info("epoch");
    const auto [end, ec] = std::from_chars(e.data(), e.data() + e.size(), done);
    if (ec != std::errc() || end != e.data() + e.size() || done < 0 || done > 100000)
        fail("--resume", "checkpoint '", a.resume, "' has epoch '", e, "', not an epoch count from 0 to 100000");
    std::printf("resumed from %s after epoch %d (%lld steps)\n", c.generation.c_str(), done,
                static_cast<long long>(opt.steps()));
    return done;
}

// What an evaluation on the test set reports: its loss (for the curve) and a line of text.
struct Evaluation {
    double loss = 0;
    std::string text;  // e.g. "test_loss 0.3012  test_accuracy 0.8931"
    double metric = 0;  // the example's own figure (accuracy, MSE)
};

// What a data-parallel run (--distributed, examples/distributed.hpp) changes in the training
// loop; the defaults are one process. Only rank 0 evaluates and writes files (the other
// ranks' stdout is closed by examples/distributed.hpp).
struct Parallel {
    int rank = 0, world_size = 1;
    std::function<void()> after_backward;  // averages the gradients over the ranks
    std::function<double(double)> mean;    // a value averaged over the ranks (the step's loss)
    bool root() const { return rank == 0; }
};

// The training loop both examples run: resume (--resume), then for every remaining epoch
// reseed the layers' randomness from (seed, epoch), train on `train`'s batches with
// `loss_of(batch)` and `opt`, show the progress, evaluate (`evaluate()`, called in eval mode
// without gradients), save the checkpoint and redraw the loss curve <out>/<program>_loss.png.
// Every step's loss goes to <out>/<program>_steps.csv ("epoch,step,loss", this run's steps).
// Returns the last evaluation (run once more when --resume had nothing left to train).
template <class LossOf, class Evaluate>
Evaluation fit(const Program& p, const Options& a, nn::Module& model, nn::Optimizer& opt, const DataLoader& train,
               LossOf loss_of, Evaluate evaluate, const Parallel& par = {}) {
    History h;
    const std::int64_t n_train = train.size();
    // Refused up front, not after 0 steps or a NaN metric: a run must train at least one step.
    if (train.batches() < 1)
        fail("--limit", p.name, ": the training set gives no batch (", train.size(), " images, ", par.world_size,
             " rank(s), --batch ", a.batch, ")");
    const int done = resume(model, opt, a, n_train, h);
    const std::string ckpt = checkpoint_dir(a, p), curve = out_path(a, std::string(p.name) + "_loss.png");
    auto eval = [&] {
        if (!par.root()) return Evaluation{};
        model.eval();
        ag::NoGradGuard no_grad;
        Evaluation e = evaluate();
        model.train();
        return e;
    };
    std::ofstream steps_csv;
    const std::string steps_path = out_path(a, std::string(p.name) + "_steps.csv");
    // The step log is a result like the others: a run that cannot write it fails, naming it.
    auto check_steps = [&] {
        if (!steps_csv) fail("--out", "cannot write the step log '", steps_path, "'");
    };
    if (par.root()) {
        steps_csv.open(steps_path);
        steps_csv << "epoch,step,loss\n";
        check_steps();
    }
    Evaluation last;
    bool evaluated = false;
    const Clock::time_point t0 = Clock::now();
    for (int epoch = done + 1; epoch <= a.epochs; ++epoch) {
        manual_seed(epoch_seed(a.seed, epoch, 1 + static_cast<std::uint64_t>(par.rank)));  // dropout masks, per rank
        model.train();
        const std::int64_t steps = train.batches();
        Progress progress(epoch, a.epochs, steps);
        LossRecorder rec(h, epoch, steps);
        for (std::int64_t s = 0; s < steps; ++s) {
            const Batch batch = train.batch(epoch, s);
            const ag::Variable loss = loss_of(batch);
            opt.zero_grad();
            loss.backward();
            if (par.after_backward) par.after_backward();
            opt.step();
            const double l = par.mean ? par.mean(loss.item()) : loss.item();
            rec.add(s, l);
            progress.step(l, batch.images.shape()[0] * par.world_size);
            if (par.root()) {
                char line[64];
                std::snprintf(line, sizeof line, "%d,%lld,%.9g\n", epoch, static_cast<long long>(s), l);
                steps_csv << line;
            }
        }
        const double train_secs = progress.seconds();
        const Clock::time_point te = Clock::now();
        last = eval();
        evaluated = true;
        h.test_x.push_back(epoch);
        h.test_y.push_back(last.loss);
        std::printf("epoch %d/%d  %s  (train %.1f s, %.0f img/s; test %.1f s; total %.1f s)\n", epoch, a.epochs,
                    last.text.c_str(), train_secs, static_cast<double>(progress.images()) / train_secs,
                    seconds_since(te), seconds_since(t0));
        std::fflush(stdout);
        if (par.root()) {
            steps_csv.flush();
            check_steps();
            save(model, opt, ckpt, a, n_train, epoch, h);
            h.plot(curve, run_title(p, a, par.world_size));
        }
    }
    if (!evaluated) {
        last = eval();
        std::printf("after epoch %d  %s\n", done, last.text.c_str());
    }
    std::printf("wrote %s (train loss blue, test loss orange) and checkpoint %s\n", curve.c_str(), ckpt.c_str());
    return last;
}

}  // namespace tg::example
