// The layers, optimizer, scheduler, printing and metric of the everyday API: LayerNorm, GELU,
// Embedding, Softmax/LogSoftmax, AdamW, ReduceLROnPlateau against PyTorch 1.13 goldens
// (tests/golden/layers, written by gen_layers.py there), f64 gradcheck and gradgradcheck of
// the differentiable layers, the module tree printout, accuracy, and the layer guards.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>

#include "tensor_helpers.hpp"
#include "tapegrad/autograd/catch_matchers.hpp"
#include "tapegrad/tapegrad.hpp"

using namespace tg;
using testing::check_close;
using testing::golden;

TEST_CASE("LayerNorm matches PyTorch: value and the gradients of input, weight and bias", "[nn][everyday][golden]") {
    nn::LayerNorm ln({3, 4}, 1e-5, true, DType::f64);
    ln.weight.assign(golden("layers", "layernorm.w"));
    ln.bias.assign(golden("layers", "layernorm.b"));
    const ag::Variable x = ag::param(golden("layers", "layernorm.x"));
    const ag::Variable y = ln(x);
    check_close(y.value(), golden("layers", "layernorm.y"), 1e-12, "layer norm value");
    ag::backward({y}, {golden("layers", "layernorm.gy")});
    check_close(x.grad(), golden("layers", "layernorm.dx"), 1e-12, "dx");
    check_close(ln.weight.grad(), golden("layers", "layernorm.dw"), 1e-12, "dweight");
    check_close(ln.bias.grad(), golden("layers", "layernorm.db"), 1e-12, "dbias");
    nn::LayerNorm plain({4}, 1e-5, false, DType::f64);
    CHECK(plain.parameters().empty());
    const ag::Function f = [&plain](const std::vector<ag::Variable>& v) { return plain(v[0]); };
    const Tensor x0 = randn({2, 4}, DType::f64);
    CHECK_THAT(f, test::PassesGradcheck({x0}));
    CHECK_THAT(f, test::PassesGradgradcheck({x0}));
    CHECK_THROWS_WITH(ln(ag::constant(Tensor::zeros({2, 4, 3}, DType::f64))),
                      Catch::Contains("LayerNorm: input [2, 4, 3] does not end with normalized_shape [3, 4]"));
}

TEST_CASE("GELU, exact and tanh forms, matches PyTorch and passes gradgradcheck", "[nn][everyday][golden]") {
    for (const auto& [form, approx] : {std::pair{"none", nn::GELU::Approximate::none}, {"tanh", nn::GELU::Approximate::tanh}}) {
        const std::string name = std::string("gelu_") + form;
        INFO(name);
        nn::GELU gelu(approx);
        const ag::Variable x = ag::param(golden("layers", name + ".x"));
        const ag::Variable y = gelu(x);
        check_close(y.value(), golden("layers", name + ".y"), 1e-12, "value");
        ag::backward({y}, {golden("layers", name + ".gy")});
        check_close(x.grad(), golden("layers", name + ".dx"), 1e-12, "gradient");
        const ag::Function f = [&gelu](const std::vector<ag::Variable>& v) { return gelu(v[0]); };
        const Tensor x0 = randn({3, 5}, DType::f64);
        CHECK_THAT(f, test::PassesGradcheck({x0}));
        CHECK_THAT(f, test::PassesGradgradcheck({x0}));
    }
}

TEST_CASE("Embedding matches PyTorch; its padding row gets no gradient; bad indices are named", "[nn][everyday][golden]") {
    nn::Embedding emb(6, 3, 2, DType::f64);
    CHECK(emb.weight.value().select(0, 2).values() == std::vector<double>{0, 0, 0});  // the padding row starts at zero
    emb.weight.assign(golden("layers", "embedding.w"));
    const Tensor idx = golden("layers", "embedding.idx").to(DType::i64);
    const ag::Variable y = emb(ag::constant(idx));
    CHECK(y.shape() == Shape{2, 3, 3});
    check_close(y.value(), golden("layers", "embedding.y"), 0, "rows");
    ag::backward({y}, {golden("layers", "embedding.gy")});
    check_close(emb.weight.grad(), golden("layers", "embedding.dw"), 1e-12, "weight gradient (row 2 zero)");
    CHECK_THROWS_WITH(emb(ag::constant(Tensor::from({2, 2}, {0, 1, 6, 1}, DType::i64))),
                      Catch::Contains("Embedding: index 6 at position [1, 0] is out of range for 6 embeddings (valid: 0..5)"));
    CHECK_THROWS_WITH(emb(ag::constant(Tensor::from({1}, {-1}, DType::i32))), Catch::Contains("Embedding: index -1"));
    CHECK_THROWS_WITH(emb(ag::constant(Tensor::zeros({2}))), Catch::Contains("Embedding: indices must be i32 or i64, got f32"));
    CHECK_THROWS_WITH(nn::Embedding(4, 2, 4), Catch::Contains("Embedding: padding_idx 4 out of range for 4 embeddings"));
    // (Its lookup is ag::index_select, whose gradcheck and gradgradcheck are in test_tensor_index.cpp.)
}

TEST_CASE("Softmax and LogSoftmax modules are the ag functions along their dim", "[nn][everyday]") {
    const ag::Variable x = ag::constant(randn({2, 3, 4}, DType::f64));
    CHECK(nn::Softmax(1)(x).value().values() == ag::softmax(x, 1).value().values());
    CHECK(nn::LogSoftmax(-1)(x).value().values() == ag::log_softmax(x, -1).value().values());
}

TEST_CASE("AdamW matches torch.optim.AdamW over three steps (decoupled weight decay)", "[nn][everyday][golden]") {
    ag::Variable p = ag::param(golden("layers", "adamw.p0"));
    nn::AdamW opt({p}, 0.05, 0.8, 0.95, 1e-6, 0.1);
    CHECK(std::string(opt.kind()) == "AdamW");
    const Tensor grads = golden("layers", "adamw.grads");
    for (std::int64_t k = 0; k < 3; ++k) {
        p.set_grad(grads[k].contiguous());
        opt.step();
    }
    check_close(p.value(), golden("layers", "adamw.p3"), 1e-12, "parameters after 3 steps");
}

TEST_CASE("ReduceLROnPlateau follows PyTorch's rate sequence in both modes", "[nn][everyday][golden]") {
    struct Case {
        const char* name;
        nn::ReduceLROnPlateau::Options o;
    };
    using M = nn::ReduceLROnPlateau::Mode;
    const Case cases[] = {
        {"plateau_min", {.mode = M::min, .factor = 0.5, .patience = 2, .threshold = 0.01, .cooldown = 1}},
        {"plateau_max", {.mode = M::max, .factor = 0.1, .patience = 1, .threshold = 0.05,
                         .threshold_mode = nn::ReduceLROnPlateau::ThresholdMode::abs, .min_lr = 0.002}},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        const ag::Variable q = ag::param(Tensor::zeros({1}));
        nn::SGD opt({q}, 0.1);
        nn::ReduceLROnPlateau s(opt, c.o);
        const std::vector<double> metrics = golden("layers", std::string(c.name) + ".metrics").values(), want = golden("layers", std::string(c.name) + ".lrs").values();
        std::vector<double> got;
        for (double m : metrics) {
            s.step(m);
            got.push_back(opt.lr());
        }
        for (std::size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-12));
    }
    nn::SGD opt({ag::param(Tensor::zeros({1}))}, 0.1);
    CHECK_THROWS_WITH(nn::ReduceLROnPlateau(opt, {.factor = 1.0}), Catch::Contains("ReduceLROnPlateau: factor 1 must be in [0, 1)"));
}

TEST_CASE("accuracy counts rows whose argmax is the label", "[nn][everyday]") {
    const Tensor logits = Tensor::from({3, 3}, {0.1, 0.7, 0.2, 0.5, 0.5, 0.0, -1, -2, -3});  // argmax 1, 0 (tie: first), 0
    CHECK(nn::accuracy(logits, Tensor::from({3}, {1, 0, 2}, DType::i64)) == Approx(2.0 / 3));
    CHECK(nn::accuracy(logits, Tensor::from({3}, {1, 0, 0}, DType::i32)) == 1.0);
    CHECK_THROWS_WITH(nn::accuracy(logits, Tensor::from({2}, {1, 0}, DType::i64)), Catch::Contains("accuracy: labels must be [N] = [3], got [2]"));
    CHECK_THROWS_WITH(nn::accuracy(logits, Tensor::from({3}, {1, 0, 0})), Catch::Contains("accuracy: labels must be i32 or i64, got f32"));
}

TEST_CASE("a model prints as a tree with options, parameter shapes and the total count", "[nn][everyday][print]") {
    nn::Sequential net{nn::Conv(1, 4, nn::ConvOptions{3, 3}.padding(1)), nn::BatchNorm(4), nn::ReLU(),
                       nn::MaxPool(nn::PoolOptions{2, 2}), nn::Flatten(), nn::Dropout(0.25), nn::Linear(4 * 2 * 2, 3)};
    std::ostringstream s;
    s << net;
    CHECK(s.str() ==
          "Sequential (\n"
          "  (0): Conv(1, 4, kernel=[3, 3], stride=1, padding=1)  {weight [4, 1, 3, 3], bias [4]}\n"
          "  (1): BatchNorm(4, eps=1e-05, momentum=0.1)  {weight [4], bias [4]}\n"
          "  (2): ReLU\n"
          "  (3): MaxPool(kernel=[2, 2])\n"
          "  (4): Flatten\n"
          "  (5): Dropout(p=0.25)\n"
          "  (6): Linear(16, 3)  {weight [3, 16], bias [3]}\n"
          ")\n"
          "total parameters: 99\n");  // 36 + 4 + 4 + 4 + 48 + 3
    std::ostringstream d;
    d << DType::bf16 << " " << DType::b8;
    CHECK(d.str() == "bf16 bool");
}

TEST_CASE("ConvTranspose refuses output_padding >= max(stride, dilation); geometries name their input and output", "[nn][everyday]") {
    CHECK_THROWS_WITH(nn::ConvTranspose(2, 2, nn::ConvOptions{3, 3}.stride(2).output_padding(2)),
                      Catch::Contains("ConvTranspose: output_padding 2 on axis 0 must be smaller than max(stride 2, dilation 1) = 2"));
    CHECK_NOTHROW(nn::ConvTranspose(2, 2, nn::ConvOptions{3, 3}.stride(2).output_padding(1)));
    CHECK_NOTHROW(nn::ConvTranspose(2, 2, nn::ConvOptions{3}.dilation(3).output_padding(2)));  // max(1, 3) = 3
    nn::ConvTranspose up(8, 4, nn::ConvOptions{4, 4}.stride(2).padding(1));
    const ConvGeometry g = up.geometry({2, 8, 5, 5});
    CHECK(g.input_shape() == Shape{2, 8, 5, 5});    // the transposed conv's input: the small side
    CHECK(g.output_shape() == Shape{2, 4, 10, 10});
    CHECK(g.in_shape() == g.output_shape());        // in the forward convolution's terms, the i-side
    nn::Conv down(4, 8, nn::ConvOptions{4, 4}.stride(2).padding(1));
    CHECK(down.geometry({2, 4, 10, 10}).output_shape() == Shape{2, 8, 5, 5});
}
