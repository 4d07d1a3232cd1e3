// Lesson 4: a lesson that is not a convolution. A character-level language model with one
// self-attention block, trained on a real text every Debian machine has (the GNU GPL v3 in
// /usr/share/common-licenses). docs/lessons.md walks through its output.
//
//   tiny_attention [--text FILE] [--steps N] [--seed N] [--threads N]
//
// The model reads 32 characters and predicts, at every position, the character that comes
// next. Its pieces, bottom to top:
//
//   tokens [B, T]  --Embedding-->  [B, T, D]  + a learned position embedding [T, D]
//   block:  h = x + Attention(LayerNorm(x))          every position looks at itself and
//           h = h + MLP(LayerNorm(h))                the positions before it (causal mask)
//   LayerNorm, Linear(D, V)  -->  logits [B, T, V]   cross-entropy against the next characters
//
// Attention, for one sequence: q = x·Wq, k = x·Wk, v = x·Wv (each [T, D]); the scores
// q·kᵀ/√D [T, T] say how much position i attends to position j; j > i (the future) is masked
// to −∞ before the softmax over j, so each row is a distribution over the past; the output
// is those weights times v. Batched matmul (ag::matmul on [B, T, D]) does all B sequences at
// once. The MLP is Linear(D, 4D), GELU, Linear(4D, D).
//
// It checks what it claims and exits non-zero otherwise: the block passes gradcheck in f64
// on a tiny instance, and the training loss falls by at least half within the step budget
// (from the untrained model's to the mean of the last ten steps).

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "lesson.hpp"
#include "tapegrad/tapegrad.hpp"

using namespace tg;

namespace {

// One transformer block: pre-LayerNorm single-head causal self-attention, then a GELU MLP,
// each added to its input (residual connections keep the gradient path short).
struct Block : nn::Module {
    std::int64_t D;
    std::shared_ptr<nn::LayerNorm> ln1, ln2;
    std::shared_ptr<nn::Linear> wq, wk, wv, proj, up, down;
    std::shared_ptr<nn::GELU> gelu;

    Block(std::int64_t dim, DType dtype) : D(dim) {
        ln1 = register_module("ln1", nn::LayerNorm({D}, 1e-5, true, dtype));
        wq = register_module("wq", nn::Linear(D, D, false, dtype));
        wk = register_module("wk", nn::Linear(D, D, false, dtype));
        wv = register_module("wv", nn::Linear(D, D, false, dtype));
        proj = register_module("proj", nn::Linear(D, D, true, dtype));
        ln2 = register_module("ln2", nn::LayerNorm({D}, 1e-5, true, dtype));
        up = register_module("up", nn::Linear(D, 4 * D, true, dtype));
        gelu = register_module("gelu", nn::GELU());
        down = register_module("down", nn::Linear(4 * D, D, true, dtype));
    }

    // A Linear layer on [B, T, D]: it takes [N, in], so the positions are flattened first.
    static ag::Variable per_position(nn::Module& layer, const ag::Variable& x) {
        const Shape s = x.shape();
        const ag::Variable y = layer(ag::reshape(x, {s[0] * s[1], s[2]}));
        return ag::reshape(y, {s[0], s[1], y.shape()[1]});
    }

    ag::Variable attention(const ag::Variable& x) {
        const std::int64_t T = x.shape()[1];
        const ag::Variable q = per_position(*wq, x), k = per_position(*wk, x), v = per_position(*wv, x);
        // scores[b, i, j] = q_i · k_j / √D: [B, T, D] · [B, D, T] -> [B, T, T]
        const ag::Variable scores = ag::matmul(q, ag::transpose(k, 1, 2)) * (1.0 / std::sqrt(static_cast<double>(D)));
        // The causal mask: true above the diagonal (j > i), where a position would see the future.
        const Tensor future = gt(arange(T, DType::i64).reshape({1, T}), arange(T, DType::i64).reshape({T, 1}));
        const ag::Variable weights = ag::softmax(ag::masked_fill(scores, future, -INFINITY), -1);
        return per_position(*proj, ag::matmul(weights, v));  // [B, T, T] · [B, T, D]
    }

    ag::Variable forward(const ag::Variable& x) override {
        const ag::Variable h = x + attention((*ln1)(x));
        return h + per_position(*down, (*gelu)(per_position(*up, (*ln2)(h))));
    }
};

struct CharModel : nn::Module {
    std::int64_t T;
    std::shared_ptr<nn::Embedding> tokens, positions;
    std::shared_ptr<Block> block;
    std::shared_ptr<nn::LayerNorm> ln;
    std::shared_ptr<nn::Linear> head;

    CharModel(std::int64_t vocab, std::int64_t context, std::int64_t dim) : T(context) {
        tokens = register_module("tokens", nn::Embedding(vocab, dim));
        positions = register_module("positions", nn::Embedding(context, dim));
        block = register_module("block", std::make_shared<Block>(dim, DType::f32));
        ln = register_module("ln", nn::LayerNorm({dim}));
        head = register_module("head", nn::Linear(dim, vocab));
    }

    // ids [B, T] (i64) -> logits [B, T, V]
    ag::Variable forward(const ag::Variable& ids) override {
        const ag::Variable x = (*tokens)(ids) + (*positions)(ag::constant(arange(T, DType::i64)));  // [B, T, D] + [T, D]
        return Block::per_position(*head, (*ln)((*block)(x)));
    }
};

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("--text", "tiny_attention: cannot read the text file '", path, "'");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

int main(int argc, char** argv) try {
    std::string text_path = "/usr/share/common-licenses/GPL-3";
    int steps = 1000, threads = 2;
    std::uint64_t seed = 1;
    cli::Parser cl("tiny_attention", "Lesson 4: a character-level model with one self-attention block, trained on a real text");
    cl.option("--text", text_path, "the text to learn").type("FILE");
    cl.option("--steps", steps, "training steps", 10, 100000);
    cl.option("--seed", seed, "the seed of the weights and the batches", 0, std::int64_t{1} << 62);
    cl.option("--threads", threads, "threads", 1, kMaxThreads);
    if (!cl.parse(argc, argv)) return 0;
    set_num_threads(threads);

    // 1. The check first: the block's gradients against finite differences, in f64, on a
    //    tiny instance (2 sequences of 4 positions, D = 8).
    manual_seed(seed);
    Block tiny(8, DType::f64);
    const ag::Function f = [&](const std::vector<ag::Variable>& v) { return tiny(v[0]); };
    const ag::CheckReport report = ag::gradcheck(f, {randn({2, 4, 8}, DType::f64)});
    std::printf("gradcheck of the block (f64, [2, 4, 8]): %s\n", report.ok ? "ok" : "FAILED");
    lesson::claim(report.ok, "the attention block passes gradcheck:\n", report.table());

    // 2. The data: the characters of the text, as ids into a sorted vocabulary.
    const std::string text = read_text(text_path);
    std::map<char, std::int64_t> vocab;
    for (char c : text) vocab.emplace(c, 0);
    std::int64_t next = 0;
    for (auto& [c, id] : vocab) id = next++;
    lesson::claim(text.size() > 1000, "the text has more than 1000 characters (", text.size(), ")");
    std::vector<double> ids;
    for (char c : text) ids.push_back(static_cast<double>(vocab[c]));
    const std::int64_t V = next, T = 32, B = 16, D = 48;
    std::printf("text: %s, %zu characters, %lld distinct\n", text_path.c_str(), text.size(), static_cast<long long>(V));

    // 3. The model and its optimizer.
    CharModel model(V, T, D);
    std::cout << model;
    nn::AdamW opt(model.parameters(), 1e-2);

    // 4. Training: each step takes B random windows of T + 1 characters; the model sees the
    //    first T and is scored on predicting the last T (each window shifted by one).
    Generator gen(seed);
    double first = 0, last = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int step = 0; step < steps; ++step) {
        std::vector<double> starts(B);
        gen.fill_uniform(starts);
        std::vector<double> xs, ys;
        for (double u : starts) {
            const auto s = static_cast<std::int64_t>(u * static_cast<double>(ids.size() - T - 1));
            for (std::int64_t t = 0; t < T; ++t) {
                xs.push_back(ids[static_cast<std::size_t>(s + t)]);
                ys.push_back(ids[static_cast<std::size_t>(s + t + 1)]);
            }
        }
        const Tensor x = Tensor::from({B, T}, xs, DType::i64), y = Tensor::from({B * T}, ys, DType::i64);
        opt.zero_grad();
        const ag::Variable logits = model(ag::constant(x));  // [B, T, V]
        ag::Variable loss = ag::cross_entropy(ag::reshape(logits, {B * T, V}), ag::constant(y));
        loss.backward();
        opt.step();
        // The claim's two ends: the untrained model's loss (step 0, about log V) and the mean
        // of the last ten steps (one batch is noisy).
        if (step == 0) first = loss.item();
        if (step >= steps - 10) last += loss.item() / 10;
        if (step % 50 == 0 || step == steps - 1) std::printf("step %4d  loss %.3f\n", step, loss.item());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("loss %.3f -> %.3f in %d steps (%.1f s; log(V) = %.3f is a uniform guess)\n", first, last, steps, seconds,
                std::log(static_cast<double>(V)));
    lesson::claim(last <= first / 2, "the loss falls by at least half: ", first, " -> ", last);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
}
