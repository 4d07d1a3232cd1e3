// A user's first program: fit y = conv_transpose(x) with one layer, from outside the tree.
#include <tapegrad/tapegrad.hpp>

#include <cstdio>

int main() {
    using namespace tg;
    ag::Variable x = ag::constant(Tensor::full({2, 3, 4}, 0.5, DType::f32));
    ag::Variable target = ag::constant(Tensor::full({2, 2, 8}, 0.25, DType::f32));
    nn::ConvTranspose up(3, 2, nn::ConvOptions{2}.stride(2));
    nn::Adam opt(up.parameters(), 0.05);
    double first = 0, last = 0;
    for (int step = 0; step < 100; ++step) {
        opt.zero_grad();
        ag::Variable loss = ag::mse_loss(up(x), target);
        loss.backward();
        opt.step();
        (step == 0 ? first : last) = loss.item();
    }
    std::printf("loss %.3g -> %.3g\n", first, last);
    return last < first * 1e-3 ? 0 : 1;
}
