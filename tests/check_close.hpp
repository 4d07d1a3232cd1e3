// One closeness check for the tests that compare whole tensors (the PyTorch goldens, the
// fused kernels against their compositions): max |a − e| ≤ tol·(1 + max|e|), element-wise
// in the worst case, with the worst difference in the message.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "tapegrad/core/tensor.hpp"

namespace tg::testclose {

inline void check_close(const Tensor& a, const Tensor& e, double tol, const std::string& what) {
    INFO(what);
    REQUIRE(a.shape() == e.shape());
    const auto x = a.values(), y = e.values();
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        worst = std::max(worst, std::fabs(x[i] - y[i]));
        scale = std::max(scale, std::fabs(y[i]));
    }
    INFO("max abs diff " << worst << ", max |expected| " << scale);
    CHECK(worst <= tol * (1 + scale));
}

}  // namespace tg::testclose
