// One closeness check for the tests that compare whole tensors (the PyTorch goldens, the
// fused kernels against their compositions): max |a − e| ≤ tol·(1 + max|e|), element-wise
// in the worst case, with the worst difference in the message; and bit equality, for the
// fused ops that promise the bits of their compositions.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
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

// The same dtype, shape and bytes (NaN payloads and the sign of zero included).
inline bool same_bits(const Tensor& a, const Tensor& b) {
    if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
    const Tensor ac = a.contiguous(), bc = b.contiguous();
    return std::memcmp(ac.raw_data(), bc.raw_data(), static_cast<std::size_t>(ac.numel() * dtype_size(ac.dtype()))) == 0;
}

}  // namespace tg::testclose
