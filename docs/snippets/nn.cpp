// docs/nn.md's blocks, compiled and run (ctest: docs.snippet.nn).
#include <tapegrad/data/loader.hpp>
#include <tapegrad/tapegrad.hpp>

#include <filesystem>
#include <iostream>

using namespace tg;

namespace {

// The data-and-evaluation block on a stand-in for Fashion-MNIST: 8×8 images whose class (of
// 4) a fixed random linear "teacher" decides, so a linear model can learn it.
int train_and_evaluate() {
    manual_seed(3);
    const Tensor teacher = randn({64, 4});
    auto make = [&](std::int64_t n) {
        const Tensor x = randn({n, 1, 8, 8});
        return std::pair{x, argmax(matmul(x.reshape({n, 64}), teacher), 1)};
    };
    const auto [images, labels] = make(1024);
    const auto [test_images, test_labels] = make(500);
    nn::Sequential model{nn::Flatten(), nn::Linear(64, 4)};
    nn::Adam opt(model.parameters(), 1e-2);
    double last = 0;
    // doc-begin: train-evaluate
    DataLoader train(images, labels, {.batch = 64, .seed = 1});
    DataLoader test(test_images, test_labels, {.batch = 250, .shuffle = false});
    for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
        for (std::int64_t b = 0; b < train.batches(); ++b) {
            const Batch batch = train.batch(epoch, b);
            opt.zero_grad();
            ag::cross_entropy(model(ag::constant(batch.images)), ag::constant(batch.labels)).backward();
            opt.step();
        }
        ag::NoGradGuard no_grad;  // evaluation records nothing
        double correct = 0;
        for (std::int64_t b = 0; b < test.batches(); ++b) {
            const Batch batch = test.batch(0, b);
            correct += nn::accuracy(model(ag::constant(batch.images)).value(), batch.labels) * batch.labels.numel();
        }
        std::cout << "epoch " << epoch << "  test accuracy " << correct / test.size() << "\n";
        last = correct / test.size();
    }
    // doc-end: train-evaluate
    if (!(last > 0.6)) {
        std::cerr << "train-evaluate block: test accuracy " << last << " (chance is 0.25)\n";
        return 1;
    }
    return 0;
}

}  // namespace

int main() {
    manual_seed(0);
    const Tensor x = randn({2, 1, 8, 8});
    // doc-begin: layers
    nn::Sequential net{nn::Conv(1, 8, nn::ConvOptions{3, 3}.stride(2).padding(1)), nn::ReLU(),
                       nn::ConvTranspose(8, 1, nn::ConvOptions{3, 3}.stride(2).padding(1).output_padding(1)),
                       nn::Sigmoid()};
    net.add<nn::Flatten>();                    // or build a layer in place
    ag::Variable y = net(ag::constant(x));     // forward: Variable in, Variable out
    // doc-end: layers
    if (y.shape() != Shape{2, 64}) {
        std::cerr << "layers block: y has shape " << shape_str(y.shape()) << "\n";
        return 1;
    }
    nn::Adam opt(net.parameters(), 1e-2);
    const ag::Variable target = ag::constant(full({2, 64}, 0.5));
    double first = 0, last = 0;
    const Tensor images = x;
    for (int step = 0; step < 20; ++step) {
        const ag::Variable x = ag::constant(images);  // in the docs' training step, x is a Variable
        // doc-begin: training-step
        opt.zero_grad();
        ag::Variable loss = ag::mse_loss(net(x), target);
        loss.backward();
        opt.step();
        // doc-end: training-step
        (step == 0 ? first : last) = loss.item();
    }
    if (!(last < first)) {
        std::cerr << "training-step block: the loss went from " << first << " to " << last << "\n";
        return 1;
    }
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tapegrad_docs_nn";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "out");
    std::filesystem::current_path(dir);
    // doc-begin: checkpoint
    nn::save_checkpoint(net, opt, "out/ckpt", {{"epoch", "3"}});   // model + optimizer + text info
    nn::LoadedCheckpoint c = nn::load_checkpoint(net, opt, "out/ckpt");  // both or neither
    // doc-end: checkpoint
    std::filesystem::remove_all(dir);
    if (c.info.at("epoch") != "3") {
        std::cerr << "checkpoint block: info epoch is '" << c.info.at("epoch") << "'\n";
        return 1;
    }
    return train_and_evaluate();
}
