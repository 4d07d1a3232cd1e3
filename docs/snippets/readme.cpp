// The README's short blocks, compiled and run (ctest: docs.snippet.readme).
#include <tapegrad/core/xtensor.hpp>
#include <tapegrad/tapegrad.hpp>

#include <iostream>

namespace {

int xtensor_both_ways() {
    // doc-begin: xtensor
    tg::Tensor t = tg::zeros({2, 3});
    auto v = tg::as_xtensor<float>(t);        // an xtensor view of t's buffer (strides followed)
    v(1, 2) = 5.f;                            // writes t
    tg::Tensor u = tg::from_xtensor(xt::linspace<double>(0., 1., 5) * 2.);  // evaluated straight into u
    // doc-end: xtensor
    const bool ok = t.values() == std::vector<double>{0, 0, 0, 0, 0, 5} &&
                    u.values() == std::vector<double>{0, 0.5, 1, 1.5, 2};
    if (!ok) std::cerr << "xtensor block: t = " << t << ", u = " << u << "\n";
    return ok ? 0 : 1;
}

}  // namespace

int main() { return xtensor_both_ways(); }
