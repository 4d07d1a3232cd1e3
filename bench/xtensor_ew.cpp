// xtensor's expression engine against tapegrad's own element-wise kernels (tapegrad/ops/math.hpp), at
// one thread, on 16 MiB f32 tensors: a broadcasting add ([1024, 4096] + [4096]), a same-shape
// add and exp. The contenders alternate, 15 rounds; the median of the per-round time ratios
// (xtensor / ours) is printed for each case, so a busy machine slows both sides alike.
//   build/dev/xtensor_ew
// (README.md, "Dependencies", quotes its result: which engine is used where, and why.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xtensor.hpp>

#include "tapegrad/tapegrad.hpp"

namespace {

template <class F>
double seconds(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main() {
    tg::set_num_threads(1);
    const std::int64_t R = 1024, C = 4096;
    tg::Generator gen(7);
    const tg::Tensor a = tg::randn({R, C}, gen), b = tg::randn({C}, gen), a2 = tg::randn({R, C}, gen);
    const tg::Tensor small = tg::mul(a, 0.1);  // exp's argument in a moderate range
    std::vector<std::size_t> sa{static_cast<std::size_t>(R), static_cast<std::size_t>(C)}, sb{static_cast<std::size_t>(C)};
    auto xa = xt::adapt(a.data<float>(), a.numel(), xt::no_ownership(), sa);
    auto xa2 = xt::adapt(a2.data<float>(), a2.numel(), xt::no_ownership(), sa);
    auto xb = xt::adapt(b.data<float>(), b.numel(), xt::no_ownership(), sb);
    auto xs = xt::adapt(small.data<float>(), small.numel(), xt::no_ownership(), sa);
    // Shapes are fixed above and broadcast ([1024, 4096] with [4096]); both sides allocate their result.
    using X = xt::xtensor<float, 2>;
    std::vector<double> r_bcast, r_add, r_exp, t_ours_bcast, t_ours_add, t_ours_exp;
    for (int round = 0; round < 15; ++round) {
        double ours = seconds([&] { tg::Tensor y = tg::add(a, b); });
        double theirs = seconds([&] { X y = xa + xb; });
        r_bcast.push_back(theirs / ours);
        t_ours_bcast.push_back(ours);
        ours = seconds([&] { tg::Tensor y = tg::add(a, a2); });
        theirs = seconds([&] { X y = xa + xa2; });
        r_add.push_back(theirs / ours);
        t_ours_add.push_back(ours);
        ours = seconds([&] { tg::Tensor y = tg::exp(small); });
        theirs = seconds([&] { X y = xt::exp(xs); });
        r_exp.push_back(theirs / ours);
        t_ours_exp.push_back(ours);
    }
    std::printf("xtensor / tapegrad time, median of 15 alternating rounds (16 MiB f32, 1 thread):\n");
    std::printf("  broadcast add [1024,4096]+[4096]: %.2fx  (ours %.2f ms)\n", median(r_bcast), 1e3 * median(t_ours_bcast));
    std::printf("  same-shape add:                   %.2fx  (ours %.2f ms)\n", median(r_add), 1e3 * median(t_ours_add));
    std::printf("  exp:                              %.2fx  (ours %.2f ms)\n", median(r_exp), 1e3 * median(t_ours_exp));
    return 0;
}
