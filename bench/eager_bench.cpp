// eager_bench: times tapegrad's eager tensor ops on 16 MiB f32 tensors ([2048, 2048]) and the
// machine's copy bandwidth in the same process, for bench/compare_eager.py, which alternates
// it with PyTorch running the same ops.
//
//     build/release/eager_bench [--op NAME]... [--threads 1] [--min-time 0.3] [--json]
//
// Each op runs until --min-time seconds have passed (at least 5 times); the figure is the
// median wall time of one call, and GB/s counts the bytes the op must read and write once
// (an element read or written = 4 bytes), so bandwidth-bound ops can be set against `copy`.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "tapegrad/tapegrad.hpp"

namespace {

using namespace tg;

constexpr std::int64_t kSide = 2048;  // [2048, 2048] f32 = 16 MiB
constexpr double kMiB = 1024.0 * 1024.0;

struct Op {
    double bytes;                 // read + written once
    std::function<void()> call;   // one call; its result is dropped
};

double median_ms(const std::function<void()>& f, double min_time) {
    using clock = std::chrono::steady_clock;
    f();  // warm-up: first-touch of the allocator's pages, caches
    std::vector<double> ms;
    const auto start = clock::now();
    while (ms.size() < 5 || std::chrono::duration<double>(clock::now() - start).count() < min_time) {
        const auto t0 = clock::now();
        f();
        ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
    std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> only;
    int threads = 1;
    double min_time = 0.3;
    bool as_json = false;
    cli::Parser cl("eager_bench", "Times tapegrad's eager tensor ops on 16 MiB f32 tensors against the copy bandwidth");
    cl.option("--op", only, "ops to time (default: all)",
              {"copy", "add", "add_bcast", "exp", "sum_all", "sum_last", "argmax_last", "transpose_copy"});
    cl.option("--threads", threads, "threads", 1, kMaxThreads);
    cl.option("--min-time", min_time, "seconds per op", 0, 60);
    cl.flag("--json", as_json, "one JSON object per line");
    try {
        if (!cl.parse(argc, argv)) return 0;
        set_num_threads(threads);
        manual_seed(0);
        const Tensor a = randn({kSide, kSide}), b = randn({kSide, kSide}), row = randn({kSide});
        Tensor dst = Tensor::empty({kSide, kSide});
        const double M = static_cast<double>(a.numel()) * 4;  // bytes of one operand
        const std::map<std::string, Op> ops = {
            {"copy", {2 * M, [&] { std::memcpy(dst.raw_data(), a.raw_data(), static_cast<std::size_t>(M)); }}},
            {"add", {3 * M, [&] { (void)(a + b); }}},
            {"add_bcast", {2 * M, [&] { (void)(a + row); }}},
            {"exp", {2 * M, [&] { (void)tg::exp(a); }}},
            {"sum_all", {M, [&] { (void)tg::sum(a); }}},
            {"sum_last", {M, [&] { (void)tg::sum(a, {1}); }}},
            {"argmax_last", {M, [&] { (void)tg::argmax(a, 1); }}},
            {"transpose_copy", {2 * M, [&] { (void)a.transpose(0, 1).contiguous(); }}},
        };
        if (only.empty())
            for (const auto& [name, op] : ops) only.push_back(name);
        if (!as_json) std::printf("%-15s %10s %9s   (threads %d)\n", "op", "median ms", "GB/s", threads);
        for (const std::string& name : only) {
            const Op& op = ops.at(name);
            const double ms = median_ms(op.call, min_time);
            const double gbps = op.bytes / (ms * 1e6);
            if (as_json)
                std::cout << nlohmann::json{{"op", name}, {"median_ms", ms}, {"gb_per_s", gbps},
                                            {"mib", op.bytes / kMiB}, {"threads", threads}}
                                 .dump()
                          << std::endl;
            else
                std::printf("%-15s %10.3f %9.1f\n", name.c_str(), ms, gbps);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
