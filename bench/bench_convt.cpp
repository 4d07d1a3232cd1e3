// Times the transposed convolution (ConvolutionBackpropData) and its backward (dX + dW)
// on the layer shapes of ../shared/bench/shapes.json, f32.
//
//   bench_convt [--shapes FILE] [--only NAME] [--reps N] [--threads T] [--layout NCX|NXC] [--json]
//
// Prints one line per shape: median ms and GFLOP/s for fwd and bwd, and the peak resident
// memory. GFLOP/s = 2·N·C_in·(C_out/groups)·∏kernel·∏input / time (bwd counts twice).
// bench/compare.py alternates this with PyTorch and reports the ratio.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/blas.hpp"
#include "ops/conv_kernels.hpp"

using namespace tg;

namespace {

Tensor random_tensor(const Shape& s, std::mt19937& rng) {
    Tensor t = Tensor::empty(s, DType::f32);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    float* p = t.data<float>();
    for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng);
    return t;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <class F>
double time_ms(F&& f, int reps) {
    std::vector<double> ts;
    f();  // warm-up
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        ts.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(ts);
}

double peak_rss_mib() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string shapes_path = "../shared/bench/shapes.json", only, layout = "NCX";
    int reps = 5, threads = 0;
    bool as_json = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) { std::fprintf(stderr, "error: %s needs a value\n", a.c_str()); std::exit(1); }
            return argv[++i];
        };
        if (a == "--shapes") shapes_path = next();
        else if (a == "--only") only = next();
        else if (a == "--reps") reps = std::stoi(next());
        else if (a == "--threads") threads = std::stoi(next());
        else if (a == "--layout") layout = next();
        else if (a == "--json") as_json = true;
        else { std::fprintf(stderr, "error: unknown argument %s\n", a.c_str()); return 1; }
    }
    if (threads > 0) set_num_threads(threads);
    std::ifstream f(shapes_path);
    if (!f) { std::fprintf(stderr, "error: cannot read %s\n", shapes_path.c_str()); return 1; }
    const nlohmann::json shapes = nlohmann::json::parse(f)["shapes"];
    std::mt19937 rng(42);
    if (!as_json)
        std::printf("%-16s %3s %10s %9s %10s %9s %9s\n", "shape", "thr", "fwd ms", "GFLOP/s", "bwd ms", "GFLOP/s", "peak MiB");
    for (const auto& s : shapes) {
        const std::string name = s["name"];
        if (!only.empty() && name != only) continue;
        const std::int64_t N = s["N"], Cin = s["C_in"], Cout = s["C_out"], G = s["groups"];
        const Shape input = s["input"].get<Shape>(), K = s["kernel"].get<Shape>(), st = s["strides"].get<Shape>(),
                    pb = s["pads_begin"].get<Shape>(), pe = s["pads_end"].get<Shape>(), d = s["dilations"].get<Shape>(),
                    op = s["output_padding"].get<Shape>();
        // A transposed convolution: the small input is the o-side, the upsampled result the i-side.
        ConvGeometry g;
        g.N = N;
        g.G = G;
        g.Og = Cin / G;
        g.Ig = Cout / G;
        g.kernel = K;
        g.stride = st;
        g.dilation = d;
        g.pad_begin = pb;
        g.out_size = input;
        g.layout = layout == "NXC" ? Layout::NXC : Layout::NCX;
        double flops = 2.0 * N * Cin * (Cout / G);
        for (std::size_t a = 0; a < K.size(); ++a) {
            g.in_size.push_back(st[a] * (input[a] - 1) + d[a] * (K[a] - 1) + 1 - pb[a] - pe[a] + op[a]);
            flops *= static_cast<double>(K[a] * input[a]);
        }
        const Tensor x = random_tensor(g.out_shape(), rng), W = random_tensor(g.weight_shape(), rng),
                     dy = random_tensor(g.in_shape(), rng);
        const double fwd = time_ms([&] { (void)conv_transposed(x, W, g); }, reps);
        const double bwd = time_ms([&] {
            (void)conv_forward(dy, W, g);
            (void)conv_weight_grad(dy, x, g);
        }, reps);
        const double gf = flops / 1e6;
        if (as_json)
            std::printf("{\"shape\": \"%s\", \"threads\": %d, \"fwd_ms\": %.4f, \"bwd_ms\": %.4f, \"mflop\": %.3f, \"peak_mib\": %.1f}\n",
                        name.c_str(), num_threads(), fwd, bwd, flops / 1e6, peak_rss_mib());
        else
            std::printf("%-16s %3d %10.3f %9.1f %10.3f %9.1f %9.1f\n", name.c_str(), num_threads(), fwd, gf / fwd, bwd,
                        2 * gf / bwd, peak_rss_mib());
        std::fflush(stdout);
    }
    return 0;
}
