// The flagship example: a convolutional autoencoder trained on Fashion-MNIST.
// The encoder downsamples with strided convolutions; the decoder upsamples with transposed
// convolutions (ConvTranspose, k3 s2 p1 output_padding 1: 7 -> 14 -> 28), the op family
// tapegrad is built around. It prints progress while it trains and writes a PNG with test
// images (top rows) and their reconstructions (bottom rows).
//
// After every epoch it saves a checkpoint (nn/checkpoint.hpp: the model, Adam's state, the
// epoch and the data-order RNG), and --resume DIR continues from one: a run resumed at an
// epoch boundary computes bit for bit what the uninterrupted run computes (same data,
// batch, limit and thread count; tests/resume_example.cmake checks it).
//
//   fashion_autoencoder [--data DIR] [--epochs E] [--batch B] [--limit N] [--out PNG] [--ckpt DIR] [--resume DIR]
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <string>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/nn/checkpoint.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/data/idx.hpp"
#include "tapegrad/data/image.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/optim.hpp"

using namespace tg;

namespace {

struct Args {
    std::string data = "/usr/share/datasets/fashion-mnist";
    int epochs = 2, batch = 64;
    std::int64_t limit = 0;  // use only the first `limit` training images (0: all)
    std::string out = "fashion_autoencoder.png", ckpt = "fashion_autoencoder.ckpt";
    std::string resume;  // a checkpoint folder to continue from
};

constexpr const char* kUsage =
    "usage: fashion_autoencoder [--data DIR] [--epochs E] [--batch B] [--limit N] [--out PNG] [--ckpt DIR]\n"
    "                           [--resume DIR]\n"
    "  --data DIR   Fashion-MNIST folder (default /usr/share/datasets/fashion-mnist)\n"
    "  --epochs E   passes over the training images (default 2)\n"
    "  --batch B    images per step (default 64)\n"
    "  --limit N    train on the first N images only (default: all)\n"
    "  --out PNG    the picture of test images and reconstructions (default fashion_autoencoder.png)\n"
    "  --ckpt DIR   the checkpoint folder written after every epoch (default fashion_autoencoder.ckpt)\n"
    "  --resume DIR continue from the checkpoint in DIR (same --data, --batch and --limit), up to --epochs\n";

// A whole decimal integer in [lo, hi]; anything else is an error naming the option.
std::int64_t parse_int(const std::string& opt, const std::string& v, std::int64_t lo, std::int64_t hi) {
    std::int64_t x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && end == v.data() + v.size() && (x < lo || x > hi)))
        fail(opt, "option ", opt, " is '", v, "', must be from ", lo, " to ", hi);
    if (ec != std::errc() || end != v.data() + v.size() || v.empty())
        fail(opt, "option ", opt, ": '", v, "' is not an integer");
    return x;
}

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        if (k == "--help" || k == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        }
        if (i + 1 >= argc) fail(k, "option ", k, " needs a value");
        const std::string v = argv[++i];
        if (k == "--data") a.data = v;
        else if (k == "--epochs") a.epochs = static_cast<int>(parse_int(k, v, 1, 1000000));
        else if (k == "--batch") a.batch = static_cast<int>(parse_int(k, v, 1, 1000000));
        else if (k == "--limit") a.limit = parse_int(k, v, 0, std::int64_t{1} << 40);
        else if (k == "--out") a.out = v;
        else if (k == "--ckpt") a.ckpt = v;
        else if (k == "--resume") a.resume = v;
        else fail(k, "unknown option ", k);
    }
    return a;
}

// Rows `idx` of images [N, 28, 28] as a batch [B, 1, 28, 28].
Tensor gather(const Tensor& images, const std::vector<std::int64_t>& idx, std::size_t from, std::size_t count) {
    const std::int64_t px = images.shape()[1] * images.shape()[2];
    Tensor b = Tensor::empty({static_cast<std::int64_t>(count), 1, images.shape()[1], images.shape()[2]}, DType::f32);
    for (std::size_t i = 0; i < count; ++i)
        std::memcpy(b.data<float>() + static_cast<std::int64_t>(i) * px, images.data<float>() + idx[from + i] * px,
                    static_cast<std::size_t>(px) * sizeof(float));
    return b;
}

struct AutoEncoder : nn::Module {
    std::shared_ptr<nn::Sequential> encoder, decoder;
    AutoEncoder() {
        const nn::ConvOptions down = nn::ConvOptions{3, 3}.stride(2).padding(1);
        const nn::ConvOptions up = nn::ConvOptions{3, 3}.stride(2).padding(1).output_padding(1);
        encoder = register_module("encoder", nn::Sequential{nn::Conv(1, 16, down),   // 28 -> 14
                                                            nn::ReLU(),
                                                            nn::Conv(16, 32, down),  // 14 -> 7
                                                            nn::ReLU(),
                                                            nn::Flatten(),
                                                            nn::Linear(32 * 7 * 7, 32)});  // the code
        decoder = register_module("decoder", nn::Sequential{nn::Linear(32, 32 * 7 * 7),
                                                            nn::ReLU(),
                                                            nn::Unflatten({32, 7, 7}),
                                                            nn::ConvTranspose(32, 16, up),  // 7 -> 14
                                                            nn::ReLU(),
                                                            nn::ConvTranspose(16, 1, up)});  // 14 -> 28, logits
    }
    ag::Variable forward(const ag::Variable& x) override { return decoder->forward(encoder->forward(x)); }
};

}  // namespace

int main(int argc, char** argv) try {
    const Args a = parse(argc, argv);
    std::printf("loading Fashion-MNIST from %s\n", a.data.c_str());
    Tensor train = read_idx_images(a.data + "/train-images-idx3-ubyte.gz");
    const Tensor test = read_idx_images(a.data + "/t10k-images-idx3-ubyte.gz");
    std::int64_t n_train = train.shape()[0];
    if (a.limit > 0) n_train = std::min(n_train, a.limit);
    std::printf("train %lld images, test %lld images, 28x28\n", static_cast<long long>(n_train),
                static_cast<long long>(test.shape()[0]));

    manual_seed(7);
    AutoEncoder model;
    nn::Adam opt(model.parameters(), 2e-3);
    std::printf("model: %lld parameters\n", static_cast<long long>(model.parameter_count()));

    // The data order: each epoch shuffles 0..n-1 afresh with this generator, so its state
    // at an epoch boundary is all a resumed run needs.
    std::vector<std::int64_t> order(static_cast<std::size_t>(n_train));
    std::mt19937 rng(1);
    int done = 0;  // epochs completed
    if (!a.resume.empty()) {
        const nn::LoadedCheckpoint c = nn::load_checkpoint(model, opt, a.resume);
        for (const std::string& s : c.skipped) std::printf("warning: skipped %s\n", s.c_str());
        auto info = [&](const std::string& k) -> const std::string& {
            const auto it = c.info.find(k);
            if (it == c.info.end()) fail("resume", "checkpoint '", a.resume, "' lacks the value '", k, "'");
            return it->second;
        };
        done = static_cast<int>(parse_int("epoch", info("epoch"), 0, 1000000));
        if (info("n_train") != std::to_string(n_train) || info("batch") != std::to_string(a.batch))
            fail("resume", "checkpoint '", a.resume, "' was trained on ", info("n_train"), " images in batches of ",
                 info("batch"), ", this run has ", n_train, " and ", a.batch, " (give the same --limit and --batch)");
        std::istringstream is(info("rng"));
        is >> rng;
        if (!is) fail("resume", "checkpoint '", a.resume, "': unreadable RNG state");
        std::printf("resumed from %s after epoch %d (%lld steps)\n", c.generation.c_str(), done,
                    static_cast<long long>(opt.steps()));
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (int epoch = done + 1; epoch <= a.epochs; ++epoch) {
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        double running = 0;
        int seen = 0;
        const std::size_t steps = (order.size() + a.batch - 1) / a.batch;
        for (std::size_t s = 0; s < steps; ++s) {
            const std::size_t from = s * a.batch, count = std::min<std::size_t>(a.batch, order.size() - from);
            const ag::Variable x = ag::constant(gather(train, order, from, count));
            const ag::Variable loss = ag::bce_with_logits(model(x), x);
            opt.zero_grad();
            loss.backward();
            opt.step();
            running += loss.item();
            ++seen;
            if ((s + 1) % 100 == 0 || s + 1 == steps) {
                const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                std::printf("epoch %d  step %4zu/%zu  loss %.4f  (%.0f s)\n", epoch, s + 1, steps, running / seen, secs);
                std::fflush(stdout);
                running = 0;
                seen = 0;
            }
        }
        std::ostringstream rs;
        rs << rng;
        nn::save_checkpoint(model, opt, a.ckpt,
                            {{"epoch", std::to_string(epoch)}, {"rng", rs.str()}, {"n_train", std::to_string(n_train)},
                             {"batch", std::to_string(a.batch)}});
    }

    // Test loss and the picture: 16 test images and their reconstructions.
    ag::NoGradGuard no_grad;
    std::vector<std::int64_t> tidx(static_cast<std::size_t>(test.shape()[0]));
    std::iota(tidx.begin(), tidx.end(), 0);
    double test_loss = 0;
    std::int64_t tn = 0;
    for (std::size_t from = 0; from < tidx.size(); from += 500) {
        const std::size_t count = std::min<std::size_t>(500, tidx.size() - from);
        const ag::Variable x = ag::constant(gather(test, tidx, from, count));
        test_loss += ag::bce_with_logits(model(x), x).item() * static_cast<double>(count);
        tn += static_cast<std::int64_t>(count);
    }
    std::printf("test loss (BCE per pixel) %.4f\n", test_loss / static_cast<double>(tn));
    const ag::Variable shown = ag::constant(gather(test, tidx, 0, 16));
    const Tensor recon = ag::sigmoid(model(shown)).value();
    std::vector<double> both = shown.value().values();
    const std::vector<double> r = recon.values();
    both.insert(both.end(), r.begin(), r.end());
    write_png_grid(a.out, Tensor::from({32, 28, 28}, both, DType::f32), 8, 3);
    std::printf("wrote %s (rows 1-2: test images, rows 3-4: reconstructions) and checkpoint %s\n", a.out.c_str(),
                a.ckpt.c_str());
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
}
