// A new user's first training program, built from outside the source tree by two ctest
// tests (find_package and add_subdirectory) and quoted in the README (the region between the
// doc markers, word for word: tests/test_docs.cpp).
// doc-begin: program
#include <tapegrad/tapegrad.hpp>

#include <iostream>

using namespace tg;

int main() {
    manual_seed(0);
    // The task: upsample 64 three-channel signals of length 8 to length 16, as a fixed
    // random "teacher" network does.
    auto make = [] {
        return nn::Sequential{nn::ConvTranspose(3, 8, nn::ConvOptions{4}.stride(2).padding(1)), nn::ReLU(),
                              nn::Conv(8, 2, nn::ConvOptions{3}.padding(1))};
    };
    nn::Sequential teacher = make(), student = make();
    const ag::Variable x = ag::constant(randn({64, 3, 8}));
    const ag::Variable y = ag::constant(teacher(x).value());

    nn::Adam opt(student.parameters(), 1e-2);
    double first = 0, last = 0;
    for (int step = 0; step < 100; ++step) {
        opt.zero_grad();
        ag::Variable loss = ag::mse_loss(student(x), y);
        loss.backward();
        opt.step();
        (step == 0 ? first : last) = loss.item();
        if (step % 25 == 0) std::cout << "step " << step << "  loss " << loss.item() << "\n";
    }
    std::cout << "loss " << first << " -> " << last << "\n";
    return last < first / 4 ? 0 : 1;
}
// doc-end: program
