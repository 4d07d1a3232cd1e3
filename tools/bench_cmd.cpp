// `tapegrad bench --shapes FILE.json [options]`: times the three convolution kernels on the
// transposed-convolution layer shapes of a shapes file (format: docs/cases.md#tapegrad-bench;
// the project's benchmark shapes are bench/shapes.json).
//
// Each shape is a transposed convolution (ConvolutionBackpropData). Its small `input` tensor
// [N, C_in, input...] is the o-side of the ConvGeometry, the upsampled result the i-side:
//   bwd_data     the transposed convolution itself:   conv_transposed(x, W, g)
//   fwd          the convolution whose data gradient it is: conv_forward(dy, W, g)
//   bwd_weights  that convolution's filter gradient:   conv_weight_grad(dy, x, g)
// fwd and bwd_weights are the two gradients of the transposed convolution (what training runs).
// FLOPs = 2·N·C_in·(C_out/groups)·∏kernel·∏input for each of the three ops.
//
// Per (shape, op): one warm-up call, then calls until --min-time seconds (default 0.3) have
// passed (at least 3, at most 1000); the median wall time (or, with --clock cpu and one
// thread, CPU time) is reported. extra_bytes is the
// peak of the library's workspace (tapegrad/core/workspace.hpp: every kernel temporary, including
// its cache kept across calls) over the timed calls; inputs and outputs are not counted.
// The cache is released before each (shape, op), so one's cache never counts in the next.
// --min-time is meant for tests and quick checks.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_kernels.hpp"
#include "tapegrad/spec/case_file.hpp"

namespace tg {

namespace {

using json = nlohmann::json;

const char* const kOps[] = {"fwd", "bwd_data", "bwd_weights", "gemm"};

// Every tensor the benchmark allocates is refused above this size (as `tapegrad run` does).
constexpr double kMaxTensorBytes = static_cast<double>(std::int64_t{4} << 30);

struct Options {
    std::string shapes_path, only;
    int threads = 0, batch = 0;  // 0: the library default / the shape's own N
    std::vector<std::string> ops;
    std::optional<Layout> layout;
    DType dtype = DType::f32;
    bool as_json = false;
    double min_time = 0.3;
    bool cpu_clock = false;  // --clock cpu: the calling thread's CPU time instead of wall time
};

struct BenchShape {
    std::string name;
    ConvGeometry g;
};

// What CLI11 checked as text, as the benchmark's settings.
Options settings(const BenchArgs& a) {
    Options o;
    o.shapes_path = a.shapes_path, o.only = a.only, o.threads = a.threads, o.batch = a.batch;
    o.as_json = a.as_json, o.min_time = a.min_time, o.cpu_clock = a.clock == "cpu";
    if (!a.layout.empty()) o.layout = a.layout == "NXC" ? Layout::NXC : Layout::NCX;
    o.dtype = a.dtype == "bf16" ? DType::bf16 : a.dtype == "f16" ? DType::f16 : DType::f32;
    std::stringstream ss(a.ops);
    std::string op;
    bool any = false;
    while (std::getline(ss, op, ',')) {
        any = true;
        if (std::find(std::begin(kOps), std::end(kOps), op) == std::end(kOps))
            fail("--ops", "bench: --ops '", a.ops, "': unknown op '", op, "' (expected fwd, bwd_data, bwd_weights, gemm)");
        if (std::find(o.ops.begin(), o.ops.end(), op) == o.ops.end()) o.ops.push_back(op);
    }
    if (!any || a.ops.back() == ',')
        fail("--ops", "bench: --ops '", a.ops, "' has an empty op name (expected fwd, bwd_data, bwd_weights, gemm)");
    if (o.cpu_clock && o.threads != 1) fail("--clock", "bench: --clock cpu times one thread, so it needs --threads 1");
    return o;
}

// ---- the shapes file -------------------------------------------------------------------

std::int64_t need_int(const json& s, const std::string& shape, const char* key, std::int64_t min) {
    if (!s.contains(key)) fail(key, "shape '", shape, "': missing key '", key, "'");
    const json& v = s[key];
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t{1} << 62))
        fail(key, "shape '", shape, "': key '", key, "' must be an integer, got ", v.dump().substr(0, 60));
    const std::int64_t n = v.get<std::int64_t>();
    if (n < min || n > std::int64_t{1} << 62)
        fail(key, "shape '", shape, "': key '", key, "' is ", n, ", must be >= ", min);
    return n;
}

Shape need_list(const json& s, const std::string& shape, const char* key, std::size_t dims, std::int64_t min) {
    if (!s.contains(key)) fail(key, "shape '", shape, "': missing key '", key, "'");
    const json& v = s[key];
    if (!v.is_array()) fail(key, "shape '", shape, "': key '", key, "' must be a list of integers, got ", v.dump().substr(0, 60));
    if (v.size() != dims)
        fail(key, "shape '", shape, "': key '", key, "' has ", v.size(), " entries, but dims is ", dims);
    Shape out;
    for (const json& e : v) {
        if (!e.is_number_integer() || (e.is_number_unsigned() && e.get<std::uint64_t>() > std::uint64_t{1} << 62))
            fail(key, "shape '", shape, "': key '", key, "' must be a list of integers, got ", v.dump().substr(0, 60));
        const std::int64_t n = e.get<std::int64_t>();
        if (n < min || n > std::int64_t{1} << 62)
            fail(key, "shape '", shape, "': key '", key, "' holds ", n, ", every entry must be >= ", min);
        out.push_back(n);
    }
    return out;
}

double tensor_bytes(const Shape& s, DType dt) {
    double n = static_cast<double>(dtype_size(dt));
    for (std::int64_t d : s) n *= static_cast<double>(d);
    return n;
}

// The shape as a ConvGeometry: the small input is the o-side, the upsampled result the
// i-side (in = s·(input−1) + d·(K−1) + 1 − pb − pe + output_padding per axis).
BenchShape read_shape(const json& s, std::size_t index, const Options& o) {
    if (!s.is_object()) fail("shapes", "shapes file: shapes[", index, "] must be an object");
    std::string name = "#" + std::to_string(index);
    if (!s.contains("name")) fail("name", "shape ", name, ": missing key 'name'");
    if (!s["name"].is_string() || s["name"].get<std::string>().empty())
        fail("name", "shape ", name, ": key 'name' must be a non-empty string");
    name = s["name"].get<std::string>();

    BenchShape b;
    b.name = name;
    const std::int64_t dims = need_int(s, name, "dims", 1);
    if (dims > kMaxSpatialAxes)
        fail("dims", "shape '", name, "': key 'dims' is ", dims, ", more spatial axes than the kernels support (", kMaxSpatialAxes, ")");
    const auto D = static_cast<std::size_t>(dims);
    const std::int64_t N = need_int(s, name, "N", 1);
    const std::int64_t C_in = need_int(s, name, "C_in", 1), C_out = need_int(s, name, "C_out", 1);
    const std::int64_t G = need_int(s, name, "groups", 1);
    if (C_in % G != 0) fail("groups", "shape '", name, "': groups ", G, " does not divide C_in ", C_in);
    if (C_out % G != 0) fail("groups", "shape '", name, "': groups ", G, " does not divide C_out ", C_out);
    const Shape input = need_list(s, name, "input", D, 1), kernel = need_list(s, name, "kernel", D, 1);
    const Shape st = need_list(s, name, "strides", D, 1), pb = need_list(s, name, "pads_begin", D, 0),
                pe = need_list(s, name, "pads_end", D, 0), dil = need_list(s, name, "dilations", D, 1),
                op = need_list(s, name, "output_padding", D, 0);
    Layout layout = Layout::NCX;
    if (s.contains("layout")) {
        const json& l = s["layout"];
        if (!l.is_string() || (l != "NCX" && l != "NXC"))
            fail("layout", "shape '", name, "': key 'layout' must be \"NCX\" or \"NXC\", got ", l.dump().substr(0, 60));
        layout = l == "NXC" ? Layout::NXC : Layout::NCX;
    }
    if (s.contains("note") && !s["note"].is_string()) fail("note", "shape '", name, "': key 'note' must be a string");

    const ConvParams p{.N = o.batch > 0 ? o.batch : N, .C_in = C_in, .C_out = C_out, .groups = G, .in_size = input,
                       .kernel = kernel, .stride = st, .dilation = dil, .pads_begin = pb, .pads_end = pe,
                       .output_padding = op, .layout = o.layout.value_or(layout)};
    b.g = ConvGeometry::transposed(p, "shape '" + name + "'");
    const ConvGeometry& g = b.g;
    const char* what[] = {"the input", "the filter", "the output"};
    const Shape shapes[] = {g.out_shape(), g.weight_shape(), g.in_shape()};
    const char* keys[] = {"input", "kernel", "input"};
    for (int t = 0; t < 3; ++t)
        if (tensor_bytes(shapes[t], DType::f32) > kMaxTensorBytes)
            fail(keys[t], "shape '", name, "': ", what[t], " ", shape_str(shapes[t]), " would need ",
                 tensor_bytes(shapes[t], DType::f32), " bytes, over the limit of ", kMaxTensorBytes);
    return b;
}

std::vector<BenchShape> read_shapes(const Options& o) {
    const std::string& path = o.shapes_path;
    json j = read_json_file(path, "--shapes", "bench: --shapes '" + path + "': cannot read the file",
                                  "bench: --shapes '" + path + "' is not valid JSON: ");
    if (!j.is_object() || !j.contains("shapes") || !j["shapes"].is_array())
        fail("--shapes", "bench: --shapes '", path, "' must hold an object with a list 'shapes'");
    std::vector<BenchShape> out;
    std::set<std::string> names;
    for (std::size_t i = 0; i < j["shapes"].size(); ++i) {
        BenchShape b = read_shape(j["shapes"][i], i, o);
        if (!names.insert(b.name).second) fail("name", "shape '", b.name, "': key 'name' is used by two shapes");
        out.push_back(std::move(b));
    }
    if (!o.only.empty()) {
        std::erase_if(out, [&](const BenchShape& b) { return b.name != o.only; });
        if (out.empty()) fail("--only", "bench: --only '", o.only, "' names no shape of '", path, "'");
    } else if (out.empty()) {
        fail("--shapes", "bench: --shapes '", path, "' holds no shape");
    }
    return out;
}

// ---- timing ----------------------------------------------------------------------------

Tensor uniform(const Shape& s, std::mt19937& rng, DType dt) {
    Tensor t = Tensor::empty(s, DType::f32);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    float* p = t.data<float>();
    for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng);
    return t.to(dt);
}

struct Timing {
    double median_ms = 0;
    std::int64_t extra_bytes = 0;
};

// Milliseconds on the wall clock, or (cpu) of the calling thread's CPU time: on a shared
// machine the CPU time leaves out the slices other processes take.
double now_ms(bool cpu) {
    if (cpu) {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F>
Timing time_op(F&& f, double min_time, bool cpu_clock) {
    release_workspace_cache();
    f();  // warm-up (fills the workspace cache a loop of calls would keep)
    reset_workspace_peak();
    std::vector<double> ms;
    const double start = now_ms(false);
    while (ms.size() < 1000) {
        const double t0 = now_ms(cpu_clock);
        f();
        ms.push_back(now_ms(cpu_clock) - t0);
        if (ms.size() >= 3 && now_ms(false) - start >= 1e3 * min_time) break;
    }
    Timing t;
    t.extra_bytes = workspace_peak_bytes();
    std::sort(ms.begin(), ms.end());
    const std::size_t n = ms.size();
    t.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    return t;
}

// The f32 GEMM library in use on the transposed convolution's GEMM: per group,
// [Ig·∏K × Og] · [Og × columns], with the columns of one of the kernel's tiles (a column
// buffer of at most 8 MiB), timed on one tile and scaled to the layer (G groups, N·∏Y
// columns). Same FLOPs as the layer, so its GFLOP/s is the ceiling the layer is held to.
Timing time_gemm(const ConvGeometry& g, double min_time, bool cpu_clock) {
    const std::int64_t M = g.R(), K = g.Og, total = g.N * g.out_numel();
    const std::int64_t cols = std::clamp<std::int64_t>((std::int64_t{8} << 20) / (4 * (M + K)), 1, total);
    std::vector<float> A(static_cast<std::size_t>(M * K), 0.5f), B(static_cast<std::size_t>(K * cols), 0.25f),
        C(static_cast<std::size_t>(M * cols));
    Timing t = time_op([&] { gemm<float>(true, false, M, cols, K, 1.f, A.data(), M, B.data(), cols, 0.f, C.data(), cols); },
                       min_time, cpu_clock);
    const double scale = static_cast<double>(g.G) * static_cast<double>(total) / static_cast<double>(cols);
    t.median_ms *= scale;
    return t;
}

}  // namespace

cli::Command& add_bench_command(cli::Parser& parser, BenchArgs& a) {
    cli::Command& c = parser.command("bench", "time the convolution kernels on the transposed-convolution shapes of a "
                                              "shapes file (format: docs/cases.md#tapegrad-bench)");
    c.option("--shapes", a.shapes_path, "the shapes file (the project's: bench/shapes.json)").type("FILE").required();
    c.option("--ops", a.ops,
             "comma-separated, of: bwd_data (the transposed convolution), fwd (the convolution that is its data "
             "gradient), bwd_weights (that convolution's filter gradient), gemm (the f32 GEMM in use on the layer's GEMM "
             "sizes, one column tile, scaled to the layer: its ceiling)")
        .type("LIST");
    c.option("--threads", a.threads, "threads; default the library's (TAPEGRAD_NUM_THREADS or the cores)", 1, kMaxThreads)
        .no_default();
    c.option("--batch", a.batch, "overrides every shape's N", 1, 2147483647).no_default();
    c.option("--layout", a.layout, "tensor layout; default each shape's \"layout\" key, else NCX", {"NCX", "NXC"});
    c.option("--dtype", a.dtype, "element type (inputs uniform in [-1, 1], fixed seed)", {"f32", "bf16", "f16"});
    c.option("--only", a.only, "only the shape called NAME").type("NAME");
    c.flag("--json", a.as_json,
           "one JSON object per line: shape, op, dtype, layout, threads, batch, median_ms, gflops, extra_bytes");
    c.option("--min-time", a.min_time, "time each (shape, op) for about S seconds (tests use 0.01)", 0, 3600).type("S");
    c.option("--clock", a.clock,
             "time calls on the wall clock, or by CPU time (--threads 1 only; leaves out the time slices other processes "
             "take on a shared machine)",
             {"wall", "cpu"});
    c.footer("Per (shape, op): one warm-up call, then at least 3 and at most 1000 calls; the median time, GFLOP/s = "
             "2*N*C_in*(C_out/groups)*prod(kernel)*prod(input) / time, and extra MiB = the peak of the kernels' workspace "
             "(temporaries and their cache; not inputs or outputs).");
    return c;
}

int cmd_bench(const BenchArgs& args) {
    const Options o = settings(args);
    const std::vector<BenchShape> shapes = read_shapes(o);
    if (o.threads > 0) set_num_threads(o.threads);
    const int threads = num_threads();
    const char* dt = dtype_name(o.dtype);

    std::size_t wname = 5;
    for (const BenchShape& b : shapes) wname = std::max(wname, b.name.size());
    if (!o.as_json) {
        std::printf("%-*s  %-11s  %-5s  %-6s  %7s  %5s  %10s  %9s  %9s\n", static_cast<int>(wname), "shape", "op", "dtype",
                    "layout", "threads", "batch", "median ms", "GFLOP/s", "extra MiB");
        std::fflush(stdout);
    }
    std::mt19937 rng(42);
    for (const BenchShape& b : shapes) {
        const ConvGeometry& g = b.g;
        const Tensor x = uniform(g.out_shape(), rng, o.dtype), W = uniform(g.weight_shape(), rng, o.dtype),
                     dy = uniform(g.in_shape(), rng, o.dtype);
        // 2·N·C_in·(C_out/groups)·∏kernel·∏input: two flops per multiply-add of the geometry.
        const double flops = 2.0 * g.macs();
        const char* layout = g.layout == Layout::NXC ? "NXC" : "NCX";
        for (const std::string& op : o.ops) {
            Timing t;
            if (op == "bwd_data") t = time_op([&] { (void)conv_transposed(x, W, g); }, o.min_time, o.cpu_clock);
            else if (op == "fwd") t = time_op([&] { (void)conv_forward(dy, W, g); }, o.min_time, o.cpu_clock);
            else if (op == "bwd_weights") t = time_op([&] { (void)conv_weight_grad(dy, x, g); }, o.min_time, o.cpu_clock);
            else t = time_gemm(g, o.min_time, o.cpu_clock);
            const double gflops = flops / (t.median_ms * 1e6);
            if (o.as_json) {
                nlohmann::ordered_json row;
                row["shape"] = b.name;
                row["op"] = op;
                row["dtype"] = dt;
                row["layout"] = layout;
                row["threads"] = threads;
                row["batch"] = g.N;
                row["median_ms"] = t.median_ms;
                row["gflops"] = gflops;
                row["extra_bytes"] = t.extra_bytes;
                std::cout << row.dump() << std::endl;
            } else {
                std::printf("%-*s  %-11s  %-5s  %-6s  %7d  %5lld  %10.4f  %9.4g  %9.2f\n", static_cast<int>(wname), b.name.c_str(),
                            op.c_str(), dt, layout, threads, static_cast<long long>(g.N), t.median_ms, gflops,
                            static_cast<double>(t.extra_bytes) / (1024.0 * 1024.0));
                std::fflush(stdout);
            }
        }
    }
    release_workspace_cache();
    return 0;
}

}  // namespace tg
