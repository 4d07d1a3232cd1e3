// The flagship example: a convolutional autoencoder trained on Fashion-MNIST.
// The encoder downsamples with strided convolutions; the decoder upsamples with transposed
// convolutions (ConvTranspose, k3 s2 p1 output_padding 1: 7 -> 14 -> 28), the op family
// tapegrad is built around. It shows its progress while it trains and writes, under --out,
// a picture of test images (top rows) and their reconstructions (bottom rows) and the loss
// curve.
//
// Shares its options, progress display, loss curve and checkpoints with fashion_classifier
// (examples/common.hpp): after every epoch it saves a checkpoint (<out>/fashion_autoencoder.ckpt:
// the model, Adam's state, the epoch, the loss history), and --resume DIR continues from one
// bit for bit as the uninterrupted run would have gone (same options and thread count;
// tests/resume_example.cmake checks it). The last line on stdout is
// `test_bce=<float> test_mse=<float>`: the per-pixel BCE of the logits and the MSE of the
// reconstructions (sigmoid), on the whole 10 000-image test set.
//
//   fashion_autoencoder [--data DIR] [--epochs N] [--limit N] [--batch N] [--threads N] [--seed N]
//                       [--out DIR] [--resume CKPT_DIR]
#include <cstdio>

#include "common.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/data/idx.hpp"
#include "tapegrad/data/image.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/optim.hpp"

using namespace tg;

namespace {

struct AutoEncoder : nn::Module {
    std::shared_ptr<nn::Sequential> encoder, decoder;
    AutoEncoder() {
        const nn::ConvOptions down = nn::ConvOptions{3, 3}.stride(2).padding(1);
        const nn::ConvOptions up = nn::ConvOptions{3, 3}.stride(2).padding(1).output_padding(1);
        // Each layer carries the ReLU after it, fused (Conv::with_relu, Linear::with_relu: the
        // ReLU costs no pass of its own; the same values and gradients as an nn::ReLU after it).
        encoder = register_module("encoder", nn::Sequential{nn::Conv(1, 16, down).with_relu(),   // 28 -> 14
                                                            nn::Conv(16, 32, down).with_relu(),  // 14 -> 7
                                                            nn::Flatten(),
                                                            nn::Linear(32 * 7 * 7, 32)});  // the code
        decoder = register_module("decoder", nn::Sequential{nn::Linear(32, 32 * 7 * 7).with_relu(),
                                                            nn::Unflatten({32, 7, 7}),
                                                            nn::ConvTranspose(32, 16, up).with_relu(),  // 7 -> 14
                                                            nn::ConvTranspose(16, 1, up)});  // 14 -> 28, logits
    }
    ag::Variable forward(const ag::Variable& x) override { return decoder->forward(encoder->forward(x)); }
};

}  // namespace

int main(int argc, char** argv) try {
    const example::Program program{"fashion_autoencoder",
                                   "Trains a convolutional autoencoder on Fashion-MNIST; prints test_bce= test_mse=.",
                                   1, 64};
    const example::Options a = example::parse_options(argc, argv, program);
    std::printf("loading Fashion-MNIST from %s\n", a.data.c_str());
    auto images = [](const Tensor& t) { return t.reshape({t.shape()[0], 1, t.shape()[1], t.shape()[2]}); };  // [N, 1, H, W]
    const Tensor train_x = images(read_idx_images(a.data + "/train-images-idx3-ubyte.gz"));
    const Tensor test_x = images(read_idx_images(a.data + "/t10k-images-idx3-ubyte.gz"));
    const DataLoader train(train_x, {.batch = a.batch, .seed = a.seed, .limit = a.limit});
    const DataLoader test(test_x, {.batch = 500, .shuffle = false});
    // The picture shows 16 test images: refuse a smaller test set before training, not after.
    if (test.size() < 16) fail("--data", "fashion_autoencoder: the test set has ", test.size(), " images, fewer than the 16 it draws");
    std::printf("train %lld images, test %lld images, 28x28; %d threads\n", static_cast<long long>(train.size()),
                static_cast<long long>(test.size()), num_threads());

    manual_seed(a.seed);
    AutoEncoder model;
    nn::Adam opt(model.parameters(), 2e-3);
    std::printf("model: %lld parameters\n", static_cast<long long>(model.parameter_count()));

    auto loss_of = [&](const Batch& b) {
        const ag::Variable x = ag::constant(b.images);
        return ag::bce_with_logits(model(x), x);
    };
    auto evaluate = [&] {
        double bce = 0, mse = 0;
        for (std::int64_t i = 0; i < test.batches(); ++i) {
            const ag::Variable x = ag::constant(test.batch(0, i).images);
            const ag::Variable logits = model(x);
            const double n = static_cast<double>(x.value().shape()[0]);
            bce += ag::bce_with_logits(logits, x).item() * n;
            mse += ag::mse_loss(ag::sigmoid(logits), x).item() * n;
        }
        const double n = static_cast<double>(test.size());
        char text[96];
        std::snprintf(text, sizeof text, "test_bce %.4f  test_mse %.4f", bce / n, mse / n);
        return example::Evaluation{bce / n, text, mse / n};
    };
    const example::Evaluation e = example::fit(program, a, model, opt, train, loss_of, evaluate);

    // The picture: 16 test images and their reconstructions.
    model.eval();
    ag::NoGradGuard no_grad;
    std::vector<std::int64_t> first(16);
    for (std::int64_t i = 0; i < 16; ++i) first[static_cast<std::size_t>(i)] = i;
    const Tensor shown = test.gather(first).images;
    std::vector<double> both = shown.values();
    const std::vector<double> r = ag::sigmoid(model(ag::constant(shown))).value().values();
    both.insert(both.end(), r.begin(), r.end());
    const std::string png = example::out_path(a, "fashion_autoencoder.png");
    GridOptions grid;
    grid.cols = 8, grid.zoom = 3;
    grid.title = "fashion_autoencoder: 16 test images and their reconstructions";
    grid.row_labels = {"test 1-8", "test 9-16", "decoded 1-8", "decoded 9-16"};
    write_png_grid(png, Tensor::from({32, 28, 28}, both, DType::f32), grid);
    std::printf("wrote %s (rows 1-2: test images, rows 3-4: reconstructions)\n", png.c_str());
    std::printf("test_bce=%.6f test_mse=%.6f\n", e.loss, e.metric);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
}
