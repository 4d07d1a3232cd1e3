// A new user's Fashion-MNIST classifier, written against the installed package only (ctest
// builds it with find_package and runs it): read the data, print the model, train one short
// epoch, evaluate without a hand loop. It fails unless the test accuracy is far above chance.
#include <tapegrad/data/idx.hpp>
#include <tapegrad/data/loader.hpp>
#include <tapegrad/tapegrad.hpp>

#include <iostream>
#include <string>

using namespace tg;

int main() {
    const std::string dir = "/usr/share/datasets/fashion-mnist/";
    const Tensor train_x = read_idx_images(dir + "train-images-idx3-ubyte.gz").reshape({-1, 1, 28, 28});
    const Tensor train_y = read_idx_labels(dir + "train-labels-idx1-ubyte.gz");
    const Tensor test_x = read_idx_images(dir + "t10k-images-idx3-ubyte.gz").reshape({-1, 1, 28, 28});
    const Tensor test_y = read_idx_labels(dir + "t10k-labels-idx1-ubyte.gz");
    DataLoader train(train_x, train_y, {.batch = 64, .seed = 1, .limit = 4096});
    DataLoader test(test_x, test_y, {.batch = 500, .shuffle = false, .limit = 2000});

    manual_seed(1);
    nn::Sequential model{nn::Conv(1, 8, nn::ConvOptions{3, 3}.padding(1)), nn::ReLU(), nn::MaxPool(nn::PoolOptions{2, 2}),
                         nn::Flatten(), nn::Linear(8 * 14 * 14, 10)};
    std::cout << model << "\n";
    nn::Adam opt(model.parameters(), 2e-3);
    for (std::int64_t b = 0; b < train.batches(); ++b) {
        const Batch batch = train.batch(0, b);
        opt.zero_grad();
        ag::Variable loss = ag::cross_entropy(model(ag::constant(batch.images)), ag::constant(batch.labels));
        loss.backward();
        opt.step();
        if (b % 16 == 0) std::cout << "step " << b << "  loss " << loss.item() << "\n";
    }

    ag::NoGradGuard no_grad;
    double correct = 0;
    for (std::int64_t b = 0; b < test.batches(); ++b) {
        const Batch batch = test.batch(0, b);
        correct += nn::accuracy(model(ag::constant(batch.images)).value(), batch.labels) * batch.labels.numel();
    }
    const double accuracy = correct / static_cast<double>(test.size());
    std::cout << "test_accuracy=" << accuracy << "\n";
    return accuracy > 0.6 ? 0 : 1;
}
