// Lesson 3: a DCGAN-style generator (docs/lessons.md, section 3).
//
// A DCGAN generator grows an image from a latent vector with a stack of blocks
//     ConvTranspose (no bias) -> BatchNorm -> ReLU
// each doubling the spatial size, and a last ConvTranspose with an output non-linearity.
// Here: a latent [z, 1, 1] becomes a 16×16 grey image, 1 -> 4 -> 8 -> 16.
//
// A real DCGAN trains the generator against a discriminator. To see the block learn in a
// few seconds, this lesson gives it a toy task instead: 8 fixed latents, each with its own
// target picture (a disc, a ring, a square, a frame, two gradients, a plus, a diagonal),
// and fits the generator to them with Adam on the mean squared error. It checks that
//   - the layer sizes follow the transposed-convolution size rule (lesson 2),
//   - the loss falls by a clear factor,
//   - each latent ends up drawing its own picture (closer to its target than to any other),
// and writes <out>/dcgan_block.png: the targets on top, what the generator makes below.
//
// Run: build/release/dcgan_block [--out DIR]   (ctest runs it; about a second in release)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "lesson.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/core/factories.hpp"
#include "tapegrad/data/image.hpp"
#include "tapegrad/nn/layers.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/optim.hpp"
#include "tapegrad/ops/shape_ops.hpp"

using namespace tg;
using tg::lesson::claim;

constexpr int kImages = 8, kLatent = 16, kSize = 16;

// The 8 target pictures, [8, 1, 16, 16] with values in [0, 1], drawn from their formulas.
Tensor targets() {
    Tensor t = zeros({kImages, 1, kSize, kSize});
    float* p = t.data<float>();
    const double c = (kSize - 1) / 2.0;  // the centre, 7.5
    for (int n = 0; n < kImages; ++n)
        for (int y = 0; y < kSize; ++y)
            for (int x = 0; x < kSize; ++x) {
                const double r = std::hypot(x - c, y - c), box = std::max(std::fabs(x - c), std::fabs(y - c));
                bool on = false;
                double v = 0;
                switch (n) {
                    case 0: on = r < 5; break;                                  // a disc
                    case 1: on = std::fabs(r - 5.5) < 1.2; break;               // a ring
                    case 2: on = box < 4; break;                                // a square
                    case 3: on = std::fabs(box - 5) < 1; break;                 // a frame
                    case 4: v = x / (kSize - 1.0); break;                       // left to right
                    case 5: v = y / (kSize - 1.0); break;                       // top to bottom
                    case 6: on = std::fabs(x - c) < 1.5 || std::fabs(y - c) < 1.5; break;  // a plus
                    default: on = std::fabs(x - y) < 1.5; break;                // a diagonal
                }
                p[(n * kSize + y) * kSize + x] = static_cast<float>(on ? 1.0 : v);
            }
    return t;
}

// Mean squared distance between image i of a and image j of b ([N, 1, 16, 16]).
double distance(const Tensor& a, int i, const Tensor& b, int j) {
    const float* pa = a.data<float>() + i * kSize * kSize;
    const float* pb = b.data<float>() + j * kSize * kSize;
    double s = 0;
    for (int k = 0; k < kSize * kSize; ++k) s += (pa[k] - pb[k]) * (pa[k] - pb[k]);
    return s / (kSize * kSize);
}

int main(int argc, char** argv) try {
    const std::filesystem::path out_dir =
        lesson::parse_out_dir(argc, argv, "dcgan_block", "Lesson 3: a DCGAN-style generator fitted to 8 toy pictures.");
    manual_seed(0);  // the layers' initial weights: the same run every time

    // The generator. Each block: a transposed convolution without bias (the BatchNorm that
    // follows subtracts the per-channel mean, which would cancel any bias), BatchNorm, ReLU.
    // The size rule of lesson 2, out = (in − 1)·s − 2·p + (k − 1) + 1, gives
    //   kernel 4, stride 1, padding 0 on 1×1:   (1 − 1)·1 − 0 + 3 + 1   = 4
    //   kernel 4, stride 2, padding 1:         (in − 1)·2 − 2 + 3 + 1  = 2·in   (8, then 16)
    // With kernel 4 and stride 2 the size exactly doubles with no output_padding, and the
    // kernel is a multiple of the stride, so every inner output position gets the same
    // number of taps, k/s = 2 per axis: no checkerboard pattern from uneven overlap.
    // doc-begin: generator
    const nn::ConvOptions doubling = nn::ConvOptions{4, 4}.stride(2).padding(1);
    nn::Sequential generator{
        nn::ConvTranspose(kLatent, 32, nn::ConvOptions{4, 4}.bias(false)), nn::BatchNorm(32), nn::ReLU(),  // 1 -> 4
        nn::ConvTranspose(32, 16, nn::ConvOptions(doubling).bias(false)), nn::BatchNorm(16), nn::ReLU(),  // 4 -> 8
        nn::ConvTranspose(16, 1, doubling),                                                               // 8 -> 16
        nn::Sigmoid()};  // pixels in (0, 1), like the targets (DCGAN uses tanh for images in [−1, 1])
    // doc-end: generator

    Generator gen(1);
    const ag::Variable z = ag::constant(randn({kImages, kLatent, 1, 1}, gen));  // one fixed latent per picture
    const Tensor target_images = targets();
    const ag::Variable target = ag::constant(target_images);

    // The sizes through the stack, checked against the rule after each transposed
    // convolution. (In eval mode BatchNorm uses its running statistics and updates nothing,
    // so this look changes no state.)
    {
        ag::NoGradGuard no_grad;
        generator.eval();
        ag::Variable h = z;
        std::printf("sizes: %s", shape_str(h.shape()).c_str());
        for (std::size_t i = 0; i < generator.size(); ++i) {
            const std::int64_t in = h.shape()[2];
            h = (*generator[i])(h);
            if (const auto* up = dynamic_cast<const nn::ConvTranspose*>(generator[i].get())) {
                const nn::ConvOptions& o = up->options();  // one value for both axes here
                const std::int64_t k = o.kernel()[0], s = o.stride()[0], p = o.padding()[0];
                claim(h.shape()[2] == (in - 1) * s - 2 * p + (k - 1) + 1 && h.shape()[3] == h.shape()[2],
                      "layer ", i, " maps ", in, "×", in, " to the size the rule gives");
                std::printf(" -> %s", shape_str(h.shape()).c_str());
            }
        }
        std::printf("\n");
        claim(h.shape() == Shape{kImages, 1, kSize, kSize}, "the generator makes [8, 1, 16, 16] images");
        generator.train();
    }

    // Training: full batch (the 8 latents), Adam, mean squared error against the targets.
    // Rows of the picture are kept along the way: what the generator makes at step 0 (before
    // any update) and at step 10.
    nn::Adam opt(generator.parameters(), 0.02);
    const int steps = 60;
    std::vector<Tensor> rows{target_images};
    double first = 0, last = 0;
    for (int step = 0; step < steps; ++step) {
        opt.zero_grad();
        const ag::Variable images = generator(z);
        ag::Variable loss = ag::mse_loss(images, target);
        loss.backward();
        opt.step();
        if (step == 0 || step == 10) rows.push_back(images.value().clone());
        (step == 0 ? first : last) = loss.item();
        if (step % 10 == 0 || step + 1 == steps) std::printf("step %2d  loss %.5f\n", step, loss.item());
    }
    std::printf("loss %.5f -> %.5f (%.0f× lower)\n", first, last, first / last);
    claim(last < first / 50, "the loss falls at least 50× in ", steps, " steps (", first, " -> ", last, ")");

    // Using it: eval() switches BatchNorm to its running statistics, the averages it kept
    // during training, so an image no longer depends on the others in its batch. Every step
    // saw the same batch here, so the averages have caught up with the batch statistics and
    // the images barely change (with varying batches they would after enough steps).
    generator.eval();
    ag::NoGradGuard no_grad;
    const ag::Variable made = generator(z);
    const double eval_loss = ag::mse_loss(made, target).item();
    std::printf("in eval mode: loss %.5f\n", eval_loss);
    claim(eval_loss < first / 50, "in eval mode the loss is still 50× below the start (", eval_loss, ")");
    const Tensor made_images = made.value().contiguous();
    rows.push_back(made_images);
    for (int i = 0; i < kImages; ++i) {
        int nearest = 0;
        for (int j = 1; j < kImages; ++j)
            if (distance(made_images, i, target_images, j) < distance(made_images, i, target_images, nearest))
                nearest = j;
        claim(nearest == i, "latent ", i, " draws its own picture (its image is nearest to target ", nearest, ")");
    }
    std::printf("each of the %d latents draws its own picture\n", kImages);

    // The picture, one row each: the targets, step 0, step 10, the trained generator.
    const std::string png = (out_dir / "dcgan_block.png").string();
    GridOptions grid;
    grid.cols = kImages, grid.zoom = 4, grid.title = "dcgan_block: what each latent draws";
    grid.row_labels = {"targets", "step 0", "step 10", "trained"};
    write_png_grid(png, cat(rows, 0), grid);
    std::printf("picture: %s (rows: targets, step 0, step 10, trained)\n", png.c_str());
    std::printf("every claim holds\n");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
}
