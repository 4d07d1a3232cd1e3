// Helpers on whole tensors shared by the tests: one closeness check for the tests that
// compare whole tensors (the PyTorch goldens, the fused kernels against their compositions):
// max |a − e| ≤ tol·(1 + max|e|), element-wise in the worst case, with the worst difference
// in the message; the largest difference itself; bit equality, for the fused ops that
// promise the bits of their compositions; random tensors (from a std::mt19937_64 or a
// tg::Generator seed), absolute values and dot products; the values of a tensor or variable;
// and reading one of the goldens (tests/golden/).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/core/npy.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tg::testing {

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

// max |a − b| over the elements (the shapes must agree).
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    const std::vector<double> x = a.values(), y = b.values();
    double m = 0;
    for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
    return m;
}

// The same dtype, shape and bytes (NaN payloads and the sign of zero included); an
// undefined tensor (a missing gradient, say) is never the same as anything.
inline bool same_bits(const Tensor& a, const Tensor& b) {
    if (!a.defined() || !b.defined()) return false;
    if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
    const Tensor ac = a.contiguous(), bc = b.contiguous();
    return std::memcmp(ac.raw_data(), bc.raw_data(), static_cast<std::size_t>(ac.numel()) * dtype_size(ac.dtype())) == 0;
}

// Values uniform in [-1, 1) from `rng` (std::uniform_real_distribution, in order), as f64
// rounded to `dt`; their absolute values; the sum of the elementwise products.
inline Tensor random_tensor(const Shape& shape, std::mt19937_64& rng, DType dt = DType::f64) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<double> v(static_cast<std::size_t>(shape_numel(shape)));
    for (double& e : v) e = u(rng);
    return Tensor::from(shape, v, DType::f64).to(dt);
}

inline Tensor abs_tensor(const Tensor& t) {
    std::vector<double> v = t.values();
    for (double& e : v) e = std::fabs(e);
    return Tensor::from(t.shape(), v, DType::f64);
}

inline double dot(const Tensor& a, const Tensor& b) {
    const std::vector<double> x = a.values(), y = b.values();
    REQUIRE(x.size() == y.size());
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
    return s;
}

// f64 values uniform in [lo, hi] (tg::Generator seeded with `seed`), each pushed `gap`
// further from 0 when gap > 0 (away from the kinks of relu, abs, ...).
inline Tensor rnd(const Shape& s, std::uint64_t seed, double lo = -1, double hi = 1, double gap = 0) {
    Generator gen(seed);
    std::vector<double> v(static_cast<std::size_t>(shape_numel(s)));
    gen.fill_uniform(v, lo, hi);
    if (gap > 0)
        for (double& x : v) x += x < 0 ? -gap : gap;
    return Tensor::from(s, v, DType::f64);
}

// The values of a tensor or of a variable, as doubles.
inline std::vector<double> vals(const Tensor& t) { return t.values(); }
inline std::vector<double> vals(const ag::Variable& v) { return v.value().values(); }

// The array of tests/golden/<dir>/<file>.npy (PyTorch's values, from the scripts there).
inline Tensor golden(const std::string& dir, const std::string& file) {
    const auto path = std::filesystem::path(TAPEGRAD_SOURCE_DIR) / "tests" / "golden" / dir / (file + ".npy");
    return read_npy(path.string(), file);
}

}  // namespace tg::testing
