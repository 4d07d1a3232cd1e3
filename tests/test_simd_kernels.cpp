// The xsimd kernels of the 16-bit conversions (tapegrad/core/convert.hpp), the element-wise ops
// (ops/elementwise.cpp) and the contiguous sums (ops/reduce.cpp) at every instruction set the
// CPU has, against the scalar path (Isa::scalar forced) as the reference: bit for bit, on the
// sizes around the vector widths (whole vectors, tails, nothing) and on special values
// (±0, ±Inf, quiet and signalling NaNs with payloads, subnormals, the f16 overflow boundary,
// f16 and bf16 ties). Outputs are pre-filled with a sentinel and guarded on both sides, so an
// element the kernels skip or a write past the end shows. The only tolerance is for the f32
// row sums against the old sequential order (they use a fixed 32-lane order instead, the same
// at every instruction set, which is checked bit for bit: in f64 on the kernels themselves,
// where any other order of additions shows in the last bits, and after rounding on data whose
// sum depends on the order).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tapegrad/core/convert.hpp"
#include "tapegrad/core/dtype.hpp"
#include "isas.hpp"
#include "tapegrad/core/simd.hpp"
#include "tapegrad/core/tensor.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/ops/elementwise_kernels.hpp"
#include "tapegrad/ops/functors.hpp"
#include "tapegrad/ops/math.hpp"
#include "tapegrad/ops/reduce.hpp"
#include "tapegrad/ops/reduce_kernels.hpp"

using namespace tg;

namespace {

// Restores the instruction set in use when the test started, also when a check throws.

const std::vector<std::int64_t> kSizes = {0, 1, 7, 15, 16, 17, 31, 33, 1000, 4099};

std::uint32_t bits(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}
std::uint64_t bits(double d) {
    std::uint64_t b;
    std::memcpy(&b, &d, 8);
    return b;
}
float f32_of(std::uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
double f64_of(std::uint64_t b) {
    double d;
    std::memcpy(&d, &b, 8);
    return d;
}

// f32 bit patterns the conversions and ops must get right.
const std::vector<std::uint32_t> kSpecial32 = {
    0x00000000, 0x80000000,                          // ±0
    0x7f800000, 0xff800000,                          // ±Inf
    0x7fc00000, 0xffc00000, 0x7fc12345, 0xffd55555,  // quiet NaNs, with payloads
    0x7f800001, 0xff800001, 0x7fa00000, 0x7f802000,  // signalling NaNs (payload below / at the f16 cut)
    0x7fffffff, 0xffffffff,                          // NaN, all payload bits
    0x00000001, 0x807fffff, 0x00400000, 0x00800000,  // f32 subnormals, smallest normal
    0x7f7fffff, 0xff7fffff,                          // ±FLT_MAX (bf16: rounds to Inf)
    0x477fe000, 0xc77fe000,                          // ±65504: f16 max finite
    0x477fefff, 0x477ff000, 0xc77ff000, 0x477ff001,  // just below 65520, ±65520 (f16 tie to Inf), above
    0x47800000,                                      // 65536
    0x33800000, 0x33000000, 0xb3000000, 0x33000001,  // f16: 2^-24, 2^-25 (tie to 0), -2^-25, just above
    0x33c00000, 0x34200000, 0x387fc000, 0x387fe000,  // f16 subnormal ties: 1.5·2^-24, 2.5·2^-24, 1023.5·2^-24
    0x387fffff, 0x38800000,                          // just below / at the f16 smallest normal
    0x3f801000, 0x3f803000, 0x3f801001, 0x3f800fff,  // f16 ties at 1: even down, odd up, just above, below
    0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff,  // bf16 ties at 1: even down, odd up, just above, below
    0x00008000, 0x00018000, 0x007f8000, 0x7f7f8000,  // bf16 ties: to 0, 1|2, to smallest normal, to Inf
    0x3f800000, 0xbf800000, 0x45000800, 0x45001800,  // ±1, 2049 and 2051 (f16 ties)
};

const std::vector<std::uint64_t> kSpecial64 = {
    0x0000000000000000, 0x8000000000000000, 0x7ff0000000000000, 0xfff0000000000000,
    0x7ff8000000000000, 0xfff8000000000000, 0x7ff8000000012345, 0x7ff0000000000001,  // quiet, payload, signalling
    0x0000000000000001, 0x800fffffffffffff, 0x0010000000000000,                      // subnormals, DBL_MIN
    0x7fefffffffffffff, 0xffefffffffffffff, 0x3ff0000000000000, 0xbff8000000000000,
};

// n f32 values: special patterns, random bit patterns and random normal numbers; the last
// min(n, 16) are specials too, so that they land in the scalar tails as well.
std::vector<float> make_f32(std::int64_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.f, 3.f);
    std::vector<float> v(static_cast<std::size_t>(n));
    const std::size_t ns = kSpecial32.size();
    for (std::int64_t i = 0; i < n; ++i) {
        const std::uint64_t r = rng();
        switch (r % 4) {
            case 0: v[i] = f32_of(kSpecial32[(r >> 8) % ns]); break;
            case 1: v[i] = f32_of(static_cast<std::uint32_t>(r >> 32)); break;
            default: v[i] = normal(rng);
        }
    }
    for (std::int64_t i = std::max<std::int64_t>(0, n - 16); i < n; ++i) v[i] = f32_of(kSpecial32[(i + seed) % ns]);
    return v;
}

std::vector<double> make_f64(std::int64_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0., 3.);
    std::vector<double> v(static_cast<std::size_t>(n));
    const std::size_t ns = kSpecial64.size();
    for (std::int64_t i = 0; i < n; ++i) {
        const std::uint64_t r = rng();
        switch (r % 4) {
            case 0: v[i] = f64_of(kSpecial64[(r >> 8) % ns]); break;
            case 1: v[i] = f64_of(rng()); break;
            default: v[i] = normal(rng);
        }
    }
    for (std::int64_t i = std::max<std::int64_t>(0, n - 16); i < n; ++i) v[i] = f64_of(kSpecial64[(i + seed) % ns]);
    return v;
}

// n 16-bit patterns: every f16/bf16 class (zeros, subnormals, normals, Inf, quiet and
// signalling NaNs) plus random ones.
std::vector<std::uint16_t> make_u16(std::int64_t n, std::uint64_t seed) {
    static const std::uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x7bff, 0xfbff, 0x7c00,
                                            0xfc00, 0x7c01, 0xfdff, 0x7e00, 0xfe01, 0x7fff, 0x3c00, 0x0080,
                                            0x007f, 0x7f80, 0xff80, 0x7f81, 0x7fc0, 0xffc1, 0x7f7f, 0x8001};
    std::mt19937_64 rng(seed);
    std::vector<std::uint16_t> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        const std::uint64_t r = rng();
        v[i] = r % 3 == 0 ? special[(r >> 8) % std::size(special)] : static_cast<std::uint16_t>(r >> 16);
    }
    for (std::int64_t i = std::max<std::int64_t>(0, n - 16); i < n; ++i) v[i] = special[(i + seed) % std::size(special)];
    return v;
}

std::vector<simd::Isa> vector_isas() { return tg::testing::tested_isas(false); }

constexpr std::int64_t kGuard = 32;  // sentinel elements before and after every output

// Runs convert(src, dst, n) into a sentinel-filled buffer with guards, at `offset` elements
// past the start of the guard; returns the n outputs and counts guard elements that changed.
template <class S, class D>
std::vector<D> run_guarded(void (*convert)(const S*, D*, std::int64_t), const S* src, std::int64_t n, D sentinel,
                           std::int64_t offset, std::int64_t& guard_hits) {
    std::vector<D> buf(static_cast<std::size_t>(n + 2 * kGuard + offset), sentinel);
    D* out = buf.data() + kGuard + offset;
    convert(src, out, n);
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(buf.size()); ++i)
        if ((i < kGuard + offset || i >= kGuard + offset + n) && std::memcmp(&buf[i], &sentinel, sizeof(D)) != 0)
            ++guard_hits;
    return std::vector<D>(out, out + n);
}

// The reference outputs of a conversion: the scalar path, forced.
template <class S, class D>
std::vector<D> scalar_reference(void (*convert)(const S*, D*, std::int64_t), const S* src, std::int64_t n, D sentinel) {
    const simd::Isa before = simd::active();
    simd::force(simd::Isa::scalar);
    std::int64_t guard_hits = 0;
    std::vector<D> r = run_guarded(convert, src, n, sentinel, 0, guard_hits);
    simd::force(before);
    REQUIRE(guard_hits == 0);
    return r;
}

// Compares a conversion at the active set with the reference outputs, bit for bit.
template <class S, class D>
void check_conversion(const char* name, void (*convert)(const S*, D*, std::int64_t), const S* src, std::int64_t n,
                      const std::vector<D>& want, D sentinel, std::int64_t offset = 0) {
    std::int64_t guard_hits = 0;
    const std::vector<D> got = run_guarded(convert, src, n, sentinel, offset, guard_hits);
    std::int64_t bad = 0;
    std::ostringstream first;
    for (std::int64_t i = 0; i < n; ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(D)) != 0 && bad++ == 0) {
            std::uint64_t sv = 0, g = 0, w = 0;
            std::memcpy(&sv, &src[i], sizeof(S));
            std::memcpy(&g, &got[i], sizeof(D));
            std::memcpy(&w, &want[i], sizeof(D));
            first << "element " << i << ": input 0x" << std::hex << sv << " gives 0x" << g << ", scalar 0x" << w;
        }
    INFO(name << " at " << simd::isa_name(simd::active()) << ", n = " << n << ", offset " << offset << ": " << bad
              << " elements differ; first: " << first.str() << "; guard elements written: " << guard_hits);
    CHECK(bad == 0);
    CHECK(guard_hits == 0);
}

}  // namespace

TEST_CASE("bulk f16/bf16 conversions equal the scalar ones bit for bit at every instruction set", "[simd][convert]") {
    testing::IsaGuard guard;
    const float fsent = f32_of(0x7fbadbad);
    const std::uint16_t hsent = 0xbeef;
    for (std::int64_t n : kSizes)
        for (std::int64_t offset : {0, 1}) {  // misaligned input and output too
            const std::vector<float> fbuf = make_f32(n + offset, static_cast<std::uint64_t>(n) * 2 + 1);
            const std::vector<std::uint16_t> hbuf = make_u16(n + offset, static_cast<std::uint64_t>(n) * 2 + 2);
            const float* f = fbuf.data() + offset;
            const std::uint16_t* h = hbuf.data() + offset;
            const auto to16 = scalar_reference(f32_to_f16_n, f, n, hsent), tob16 = scalar_reference(f32_to_bf16_n, f, n, hsent);
            const auto from16 = scalar_reference(f16_to_f32_n, h, n, fsent), fromb16 = scalar_reference(bf16_to_f32_n, h, n, fsent);
            // The scalar path is the scalar functions of tapegrad/core/dtype.hpp.
            std::int64_t bad = 0;
            for (std::int64_t i = 0; i < n; ++i)
                bad += (to16[i] != f32_to_f16(f[i])) + (tob16[i] != f32_to_bf16(f[i])) +
                       (bits(from16[i]) != bits(f16_to_f32(h[i]))) + (bits(fromb16[i]) != bits(bf16_to_f32(h[i])));
            CHECK(bad == 0);
            for (simd::Isa isa : vector_isas()) {
                simd::force(isa);
                check_conversion("f32_to_f16_n", f32_to_f16_n, f, n, to16, hsent, offset);
                check_conversion("f32_to_bf16_n", f32_to_bf16_n, f, n, tob16, hsent, offset);
                check_conversion("f16_to_f32_n", f16_to_f32_n, h, n, from16, fsent, offset);
                check_conversion("bf16_to_f32_n", bf16_to_f32_n, h, n, fromb16, fsent, offset);
            }
        }
}

TEST_CASE("bulk conversions: every 16-bit pattern, and every f32 high half with the rounding-relevant low halves",
          "[simd][convert]") {
    testing::IsaGuard guard;
    std::vector<std::uint16_t> all16(65536);
    for (std::uint32_t i = 0; i < 65536; ++i) all16[i] = static_cast<std::uint16_t>(i);
    // f32 -> f16 keeps bits 13.. of the mantissa (normal results) or fewer (subnormal ones);
    // f32 -> bf16 keeps bits 16..: the low halves below put the guard bit, the sticky bits and
    // the lowest kept bit of both in every state, under every sign, exponent and high mantissa.
    const std::uint32_t low[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2fff, 0x3000,
                                 0x3001, 0x7fff, 0x8000, 0x8001, 0x9000, 0xa000, 0xefff, 0xf000, 0xffff};
    std::vector<float> f;
    f.reserve(65536 * std::size(low));
    for (std::uint32_t hi = 0; hi < 65536; ++hi)
        for (std::uint32_t lo : low) f.push_back(f32_of(hi << 16 | lo));
    const std::int64_t nf = static_cast<std::int64_t>(f.size());
    const float fsent = f32_of(0x7fbadbad);
    const std::uint16_t hsent = 0xbeef;
    const auto to16 = scalar_reference(f32_to_f16_n, f.data(), nf, hsent);
    const auto tob16 = scalar_reference(f32_to_bf16_n, f.data(), nf, hsent);
    const auto from16 = scalar_reference(f16_to_f32_n, all16.data(), 65536, fsent);
    const auto fromb16 = scalar_reference(bf16_to_f32_n, all16.data(), 65536, fsent);
    for (simd::Isa isa : vector_isas()) {
        simd::force(isa);
        check_conversion("f32_to_f16_n", f32_to_f16_n, f.data(), nf, to16, hsent);
        check_conversion("f32_to_bf16_n", f32_to_bf16_n, f.data(), nf, tob16, hsent);
        check_conversion("f16_to_f32_n", f16_to_f32_n, all16.data(), 65536, from16, fsent);
        check_conversion("bf16_to_f32_n", bf16_to_f32_n, all16.data(), 65536, fromb16, fsent);
    }
    // F16C's VCVTPH2PS quiets a signalling NaN; the kernels must not (f16_to_f32 does not).
    CHECK(bits(from16[0x7c01]) == 0x7f802000u);
    CHECK(bits(from16[0xfd55]) == 0xffaaa000u);
}

TEST_CASE("Tensor::to between f32 and f16/bf16 converts like the scalar functions at every instruction set",
          "[simd][convert]") {
    testing::IsaGuard guard;
    for (simd::Isa isa : tg::testing::tested_isas()) {
        simd::force(isa);
        for (std::int64_t n : {std::int64_t{0}, std::int64_t{17}, std::int64_t{4099}}) {
            const std::vector<float> f = make_f32(2 * n, 77 + static_cast<std::uint64_t>(n));
            Tensor t = Tensor::empty({n, 2}, DType::f32);
            if (!f.empty()) std::memcpy(t.data<float>(), f.data(), f.size() * 4);
            // contiguous, and a strided view (every other element)
            for (const Tensor& src : {t, t.slice(1, 0, 1).reshape({n})}) {
                const Tensor c = src.contiguous();
                const float* pf = c.data<float>();
                const Tensor h = src.to(DType::f16), b = src.to(DType::bf16);
                const Tensor hf = h.to(DType::f32), bf = b.to(DType::f32), d = src.to(DType::f64);
                const Tensor df = d.to(DType::f32);
                std::int64_t bad = 0;
                for (std::int64_t i = 0; i < c.numel(); ++i) {
                    const std::uint16_t h16 = f32_to_f16(pf[i]), b16 = f32_to_bf16(pf[i]);
                    bad += h.data<std::uint16_t>()[i] != h16;
                    bad += b.data<std::uint16_t>()[i] != b16;
                    bad += bits(hf.data<float>()[i]) != bits(f16_to_f32(h16));
                    bad += bits(bf.data<float>()[i]) != bits(bf16_to_f32(b16));
                    bad += bits(d.data<double>()[i]) != bits(static_cast<double>(pf[i]));
                    bad += bits(df.data<float>()[i]) != bits(static_cast<float>(d.data<double>()[i]));
                }
                INFO(simd::isa_name(isa) << ", " << c.numel() << " elements");
                CHECK(bad == 0);
            }
        }
    }
}

namespace {

template <class T>
Tensor tensor_of(const std::vector<T>& v, const Shape& shape) {
    Tensor t = Tensor::empty(shape, std::is_same_v<T, float> ? DType::f32 : DType::f64);
    if (!v.empty()) std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(T));
    return t;
}

// Raw bits of every element (any dtype) and whether it is NaN.
std::vector<std::uint64_t> raw_bits(const Tensor& t) {
    const Tensor c = t.contiguous();
    const std::size_t es = dtype_size(c.dtype());
    std::vector<std::uint64_t> r(static_cast<std::size_t>(c.numel()), 0);
    for (std::size_t i = 0; i < r.size(); ++i) std::memcpy(&r[i], static_cast<const std::byte*>(c.raw_data()) + i * es, es);
    return r;
}

// Bitwise equality of two results of an op, element by element. `nan_ok[i]`: both inputs
// of a binary op were NaN there, where IEEE leaves open which payload the result carries
// (and the compiler may swap the operands of + and ·): any NaN then matches any NaN.
void check_same(const Tensor& got, const Tensor& want, const std::vector<bool>& nan_ok, const std::string& what) {
    REQUIRE(got.shape() == want.shape());
    REQUIRE(got.dtype() == want.dtype());
    const std::vector<std::uint64_t> g = raw_bits(got), w = raw_bits(want);
    const std::vector<double> gv = got.values(), wv = want.values();
    std::int64_t bad = 0;
    std::ostringstream first;
    for (std::size_t i = 0; i < g.size(); ++i) {
        if (g[i] == w[i] || (!nan_ok.empty() && nan_ok[i] && std::isnan(gv[i]) && std::isnan(wv[i]))) continue;
        if (bad++ == 0) first << "element " << i << ": 0x" << std::hex << g[i] << ", scalar path 0x" << w[i];
    }
    INFO(what << " at " << simd::isa_name(simd::active()) << ": " << bad << " of " << g.size()
              << " elements differ; first: " << first.str());
    CHECK(bad == 0);
}

// Runs op under Isa::scalar for the reference, then under every vector set, comparing.
template <class F>
void check_all_isas(F op, const std::vector<bool>& nan_ok, const std::string& what) {
    testing::IsaGuard guard;
    simd::force(simd::Isa::scalar);
    const Tensor want = op();
    for (simd::Isa isa : vector_isas()) {
        simd::force(isa);
        check_same(op(), want, nan_ok, what);
    }
}

std::vector<bool> both_nan(const Tensor& a, const Tensor& b) {
    const std::vector<double> av = a.values(), bv = b.values();
    std::vector<bool> r(av.size());
    for (std::size_t i = 0; i < av.size(); ++i) r[i] = std::isnan(av[i]) && std::isnan(bv[bv.size() == 1 ? 0 : i]);
    return r;
}

}  // namespace

TEST_CASE("element-wise ops equal the scalar path bit for bit at every instruction set", "[simd][elementwise]") {
    const BinaryOp bops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::ReluGrad};
    const char* bnames[] = {"add", "sub", "mul", "div", "relu_grad"};
    using Unary = Tensor (*)(const Tensor&, double);
    const std::pair<Unary, const char*> uops[] = {
        {[](const Tensor& x, double) { return neg(x); }, "neg"},
        {[](const Tensor& x, double) { return tg::abs(x); }, "abs"},
        {[](const Tensor& x, double) { return relu(x); }, "relu"},
        {[](const Tensor& x, double p) { return step(x, p); }, "step"},
        {[](const Tensor& x, double p) { return leaky_relu(x, p); }, "leaky"},
        {[](const Tensor& x, double p) { return clamp(x, -p, 0.5); }, "clamp"},
        {[](const Tensor& x, double) { return tg::sqrt(x); }, "sqrt"},
        {[](const Tensor& x, double) { return rsqrt(x); }, "rsqrt"},
        {[](const Tensor& x, double) { return tg::exp(x); }, "exp"},
        {[](const Tensor& x, double p) { return softplus(affine(x, p * 40, 0)); }, "softplus"},
        {[](const Tensor& x, double p) { return tg::tanh(affine(x, p, 0)); }, "tanh"},
        {[](const Tensor& x, double p) { return sigmoid(affine(x, p * 40, 0)); }, "sigmoid"},
        {[](const Tensor& x, double) { return tg::pow(x, 2.0); }, "pow 2"},
        {[](const Tensor& x, double) { return tg::sin(x); }, "sin (scalar everywhere)"}};
    // (0.1, 0.2) makes a fused multiply-add differ from the scalar path's two roundings.
    const std::pair<double, double> affines[] = {{-2.5, 0.3}, {0.1, 0.2}, {1e30, -1}, {1, 0}, {0, -0.0}};
    for (const DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
        for (std::int64_t n : kSizes) {
            const std::uint64_t seed = static_cast<std::uint64_t>(n) * 7 + static_cast<std::uint64_t>(dt);
            Tensor a, b, s;
            if (dt == DType::f64) {
                a = tensor_of(make_f64(n, seed), {n});
                b = tensor_of(make_f64(n, seed + 1), {n});
                s = tensor_of(std::vector<double>{0.7}, {});
            } else {
                a = tensor_of(make_f32(n, seed), {n}).to(dt);
                b = tensor_of(make_f32(n, seed + 1), {n}).to(dt);
                s = tensor_of(std::vector<float>{0.7f}, {}).to(dt);
            }
            const std::string where = std::string(dtype_name(dt)) + " n=" + std::to_string(n) + " ";
            const std::vector<bool> ab_nan = both_nan(a, b);
            for (int k = 0; k < 5; ++k) {
                check_all_isas([&] { return binary_op(bops[k], a, b); }, ab_nan, where + bnames[k]);
                check_all_isas([&] { return binary_op(bops[k], a, s); }, {}, where + bnames[k] + " by a scalar");
                check_all_isas([&] { return binary_op(bops[k], a, s.reshape({1})); }, {}, where + bnames[k] + " by [1]");
            }
            // Pairs, not structured bindings: clang 14 (the fuzz preset's) cannot capture those.
            for (const auto& u : uops)
                for (double p : {0.25, -3.0}) check_all_isas([&] { return u.first(a, p); }, {}, where + u.second);
            for (const auto& f : affines)
                check_all_isas([&] { return affine(a, f.first, f.second); }, {}, where + "affine");
        }
}

TEST_CASE("relu_grad is grad times step of x in one pass bit for bit at every instruction set", "[simd][elementwise]") {
    testing::IsaGuard guard;
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    // x: positive, zero of both signs, negative, infinities, NaN; grad: ordinary, -0, infinities, NaN.
    const std::vector<double> xs = {2.0, 0.0, -0.0, -1.5, inf, -inf, nan, 1e-30, -1e-30, 3.0, -2.0, 0.5, -0.5, 7.0, -7.0,
                                    1.0, -1.0, 4.0, -4.0};
    const std::vector<double> gs = {1.5, -2.0, inf, -inf, nan, -0.0, 0.0, 3.0, -3.0};
    std::vector<double> xv, gv;
    for (double x : xs)
        for (double g : gs) xv.push_back(x), gv.push_back(g);
    const std::int64_t n = static_cast<std::int64_t>(xv.size());
    for (simd::Isa isa : vector_isas()) {
        simd::force(isa);
        for (DType dt : {DType::f32, DType::f64, DType::bf16}) {
            const Tensor x = Tensor::from({n}, xv, DType::f64).to(dt), g = Tensor::from({n}, gv, DType::f64).to(dt);
            INFO(dtype_name(dt) << " at " << simd::isa_name(isa));
            // Elements equal bit for bit, or both NaN.
            auto same = [](const Tensor& got, const Tensor& want) {
                REQUIRE(got.dtype() == want.dtype());
                REQUIRE(got.shape() == want.shape());
                const std::vector<double> r = got.values(), w = want.values();
                std::size_t bad = 0;
                for (std::size_t i = 0; i < r.size(); ++i) bad += std::isnan(w[i]) ? !std::isnan(r[i]) : bits(r[i]) != bits(w[i]);
                return bad;
            };
            CHECK(same(relu_grad(g, x), mul(g, step(x, 0, 1))) == 0);
            // Broadcast: one x per row of grads, and a scalar x.
            const Tensor g2 = g.reshape({static_cast<std::int64_t>(xs.size()), static_cast<std::int64_t>(gs.size())});
            const Tensor xcol = Tensor::from({static_cast<std::int64_t>(xs.size()), 1}, xs, DType::f64).to(dt);
            CHECK(same(relu_grad(g2, xcol), mul(g2, step(xcol, 0, 1))) == 0);
            CHECK(same(relu_grad(g, Tensor::full({}, -1.0, dt)), mul(g, 0.0)) == 0);
            CHECK(same(relu_grad(g, Tensor::full({}, nan, dt)), g) == 0);
        }
    }
    CHECK_THROWS_WITH(relu_grad(Tensor::from({2}, {1, 2}, DType::i32), Tensor::from({2}, {1, 2}, DType::f32)),
                      Catch::Contains("relu_grad") && Catch::Contains("grad") && Catch::Contains("i32"));
}

namespace {

// The kernels' contract: out[0, k) written with the scalar expression's bits, k within one
// vector of n, nothing written from k on (the caller's scalar loop does the rest).
template <class T>
void check_kernel_coverage(const simd_ew::Kernels<T>& kt, std::int64_t n) {
    const std::vector<T> x = [&] {
        if constexpr (std::is_same_v<T, float>) return make_f32(n, 5 + static_cast<std::uint64_t>(n));
        else return make_f64(n, 5 + static_cast<std::uint64_t>(n));
    }();
    const std::vector<T> y = [&] {
        if constexpr (std::is_same_v<T, float>) return make_f32(n, 6 + static_cast<std::uint64_t>(n));
        else return make_f64(n, 6 + static_cast<std::uint64_t>(n));
    }();
    const T sentinel = std::is_same_v<T, float> ? static_cast<T>(f32_of(0x7fbadbad)) : static_cast<T>(f64_of(0x7ff00000badbad00));
    const std::int64_t max_w = 64 / static_cast<std::int64_t>(sizeof(T));  // widest vector: 64 bytes
    auto run = [&](const char* what, auto kernel, auto scalar, bool two_nan_ok) {
        std::vector<T> buf(static_cast<std::size_t>(n + 2 * kGuard), sentinel);
        T* out = buf.data() + kGuard;
        const std::int64_t k = kernel(out);
        std::int64_t bad = 0, outside = 0;
        for (std::int64_t i = 0; i < k; ++i) {
            const T w = scalar(i);
            if (bits(out[i]) != bits(w) && !(two_nan_ok && std::isnan(x[i]) && std::isnan(y[i]) && std::isnan(out[i]))) ++bad;
        }
        for (std::int64_t i = 0; i < static_cast<std::int64_t>(buf.size()); ++i)
            if ((i < kGuard || i >= kGuard + k) && bits(buf[i]) != bits(sentinel)) ++outside;
        INFO(what << " (" << (sizeof(T) == 4 ? "f32" : "f64") << ") at " << simd::isa_name(simd::active()) << ", n = " << n
                  << ": kernel did " << k << ", " << bad << " wrong, " << outside << " written outside [0, k)");
        CHECK(k >= 0);
        CHECK(k <= n);
        CHECK(n - k < max_w);
        CHECK(bad == 0);
        CHECK(outside == 0);
    };
    const T p = T(0.25), sc = T(0.1), sh = T(0.2), bs = T(0.7);
    run("add", [&](T* o) { return kt.binary(simd_ew::Bin::add, x.data(), y.data(), o, n); }, [&](std::int64_t i) { return x[i] + y[i]; }, true);
    run("sub", [&](T* o) { return kt.binary(simd_ew::Bin::sub, x.data(), y.data(), o, n); }, [&](std::int64_t i) { return x[i] - y[i]; }, true);
    run("mul", [&](T* o) { return kt.binary(simd_ew::Bin::mul, x.data(), y.data(), o, n); }, [&](std::int64_t i) { return x[i] * y[i]; }, true);
    run("div", [&](T* o) { return kt.binary(simd_ew::Bin::div, x.data(), y.data(), o, n); }, [&](std::int64_t i) { return x[i] / y[i]; }, true);
    run("relu_grad", [&](T* o) { return kt.binary(simd_ew::Bin::relu_grad, x.data(), y.data(), o, n); },
        [&](std::int64_t i) { return y[i] > T(0) || std::isnan(y[i]) ? x[i] : x[i] * T(0); }, false);
    run("relu_grad by a scalar", [&](T* o) { return kt.binary_scalar(simd_ew::Bin::relu_grad, x.data(), T(-0.0), o, n); },
        [&](std::int64_t i) { return x[i] * T(0); }, false);
    run("div by a scalar", [&](T* o) { return kt.binary_scalar(simd_ew::Bin::div, x.data(), bs, o, n); }, [&](std::int64_t i) { return x[i] / bs; }, false);
    // The functor maps of tapegrad/ops/functors.hpp on the active set.
    auto vmap = [&](const auto& f, T* o) {
        return simd_ew::map_dispatch<std::decay_t<decltype(f)>, T>.active().map(f, x.data(), o, n);
    };
    run("neg", [&](T* o) { return vmap(fn::Neg{}, o); }, [&](std::int64_t i) { return -x[i]; }, false);
    run("abs", [&](T* o) { return vmap(fn::Abs{}, o); }, [&](std::int64_t i) { return std::fabs(x[i]); }, false);
    run("relu", [&](T* o) { return vmap(fn::Relu{}, o); }, [&](std::int64_t i) { return x[i] < T(0) ? T(0) : x[i]; }, false);
    run("leaky", [&](T* o) { return vmap(fn::LeakyRelu<double>{p}, o); }, [&](std::int64_t i) { return x[i] > T(0) ? x[i] : p * x[i]; }, false);
    run("step", [&](T* o) { return vmap(fn::Step<double>{p, p}, o); }, [&](std::int64_t i) { return x[i] > T(0) ? T(1) : p; }, false);
    run("step at NaN", [&](T* o) { return vmap(fn::Step<double>{p, 1.0}, o); },
        [&](std::int64_t i) { return x[i] > T(0) ? T(1) : x[i] <= T(0) ? p : T(1); }, false);
    run("affine", [&](T* o) { return kt.affine(x.data(), sc, sh, o, n); },
        [&](std::int64_t i) {
            volatile T prod = x[i] * sc;  // rounded on its own, as the kernels must do it
            return prod + sh;
        },
        false);
}

}  // namespace

TEST_CASE("element-wise kernel tables write exactly the whole vectors they report", "[simd][elementwise]") {
    testing::IsaGuard guard;
    for (simd::Isa isa : vector_isas()) {
        simd::force(isa);
        for (std::int64_t n : kSizes) {
            check_kernel_coverage(simd_ew::dispatch().on<float>(isa), n);
            check_kernel_coverage(simd_ew::dispatch().on<double>(isa), n);
        }
    }
}

namespace {

struct SumCase {
    Shape shape;
    std::vector<int> axes;
};

// The sums the old sequential loop makes: acc[o] += x in C order, rounded once to the dtype.
Tensor sequential_sum(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
    const int nd = x.ndim();
    const std::vector<int> ax = normalize_axes(axes, nd, "sum");
    std::vector<bool> red(static_cast<std::size_t>(nd), false);
    for (int a : ax) red[static_cast<std::size_t>(a)] = true;
    Shape kept, out_shape;
    for (int a = 0; a < nd; ++a) {
        kept.push_back(red[a] ? 1 : x.shape()[a]);
        if (keepdim || !red[a]) out_shape.push_back(kept.back());
    }
    const Shape ks = contiguous_strides(kept);
    const std::vector<double> v = x.values();
    std::vector<double> acc(static_cast<std::size_t>(shape_numel(kept)), 0.0);
    std::vector<std::int64_t> idx(static_cast<std::size_t>(nd), 0);
    for (std::size_t k = 0; k < v.size(); ++k) {
        std::int64_t o = 0;
        for (int a = 0; a < nd; ++a) o += red[a] ? 0 : idx[a] * ks[a];
        acc[static_cast<std::size_t>(o)] += v[k];
        for (int a = nd - 1; a >= 0 && ++idx[a] == x.shape()[a]; --a) idx[a] = 0;
    }
    return Tensor::from(out_shape, acc, x.dtype());
}

// The documented 32-lane order of tapegrad/ops/reduce_kernels.hpp for one row, written independently.
double lanes_sum(const double* x, std::int64_t len) {
    double lane[32] = {};
    const std::int64_t body = len / 32 * 32;
    for (std::int64_t i = 0; i < body; ++i) lane[i % 32] += x[i];
    for (int w = 16; w >= 4; w /= 2)
        for (int j = 0; j < w; ++j) lane[j] += lane[j + w];
    double s = (lane[0] + lane[2]) + (lane[1] + lane[3]);
    for (std::int64_t i = body; i < len; ++i) s += x[i];
    return s;
}

// For sums over the innermost axes only: the sum of each row in the 32-lane order.
Tensor lanes_row_sums(const Tensor& x, std::int64_t len, const Shape& out_shape) {
    const std::vector<double> v = x.values();
    const std::int64_t rows = static_cast<std::int64_t>(v.size()) / len;  // len >= 32
    std::vector<double> acc(static_cast<std::size_t>(rows), 0.0);
    for (std::int64_t r = 0; r < rows; ++r) acc[r] = lanes_sum(v.data() + r * len, len);
    return Tensor::from(out_shape, acc, x.dtype());
}

}  // namespace

TEST_CASE("sum kernels: 32-lane row sums and sequential column sums, bit for bit in f64 at every instruction set",
          "[simd][reduce]") {
    const std::vector<std::pair<simd::Isa, const simd_reduce::Kernels*>> tables = [] {
        std::vector<std::pair<simd::Isa, const simd_reduce::Kernels*>> t;
        for (simd::Isa isa : tg::testing::tested_isas())
            t.push_back({isa, isa == simd::Isa::scalar ? &simd_reduce::scalar
                              : isa == simd::Isa::avx2 ? &simd_reduce::avx2 : &simd_reduce::avx512});
        return t;
    }();
    std::mt19937_64 rng(11);
    std::normal_distribution<double> normal(0., 1.);
    for (std::int64_t len : kSizes)
        for (std::int64_t rows : {1, 3}) {
            // Finite values of every magnitude: the f64 partial sums round differently in any other order.
            std::vector<float> f(static_cast<std::size_t>(rows * len));
            for (float& v : f) v = static_cast<float>(std::ldexp(normal(rng), static_cast<int>(rng() % 40) - 20));
            std::vector<double> d(f.size());
            for (double& v : d) v = std::ldexp(normal(rng), static_cast<int>(rng() % 80) - 40);
            std::vector<double> fd(f.begin(), f.end());
            std::vector<double> init(static_cast<std::size_t>(len));
            for (double& v : init) v = normal(rng);
            // References: the documented lane order; acc[j] += x[r][j] sequentially.
            std::vector<double> want_rows(static_cast<std::size_t>(rows)), want_f = init, want_d = init;
            for (std::int64_t r = 0; r < rows; ++r) {
                want_rows[r] = lanes_sum(fd.data() + r * len, len);
                for (std::int64_t j = 0; j < len; ++j) {
                    want_f[j] += fd[r * len + j];
                    want_d[j] += d[r * len + j];
                }
            }
            for (const auto& [isa, k] : tables) {
                std::vector<double> got_rows(static_cast<std::size_t>(rows) + 1, 42.0), got_f = init, got_d = init;
                got_f.push_back(42.0);
                got_d.push_back(42.0);
                k->sum_rows_f32(f.data(), rows, len, got_rows.data());
                k->accumulate_f32(f.data(), rows, len, got_f.data());
                k->accumulate_f64(d.data(), rows, len, got_d.data());
                std::int64_t bad_rows = 0, bad_f = 0, bad_d = 0;
                for (std::int64_t r = 0; r < rows; ++r) bad_rows += bits(got_rows[r]) != bits(want_rows[r]);
                for (std::int64_t j = 0; j < len; ++j) {
                    bad_f += bits(got_f[j]) != bits(want_f[j]);
                    bad_d += bits(got_d[j]) != bits(want_d[j]);
                }
                INFO(simd::isa_name(isa) << ": " << rows << " rows of " << len);
                CHECK(bad_rows == 0);
                CHECK(bad_f == 0);
                CHECK(bad_d == 0);
                CHECK((got_rows.back() == 42.0 && got_f.back() == 42.0 && got_d.back() == 42.0));  // nothing written past the end
            }
        }
}

TEST_CASE("sums: ISA-independent, exact to the sequential order where kept axes are innermost, 32-lane rows otherwise",
          "[simd][reduce]") {
    for (std::int64_t n : kSizes) {
        const std::vector<SumCase> cases = {
            {{n}, {}},                  // everything: one row
            {{3, n}, {1}},              // row sums
            {{2, 3, n}, {1, 2}},        // a suffix of two axes
            {{3, 1, n, 1}, {2}},        // size-1 axes around the reduced one: still a suffix
            {{n, 5}, {0}},              // leading axis: column sums (innermost kept)
            {{4, n, 3}, {1}},           // a middle axis
            {{2, n, 3, 17}, {0, 2}},    // reduced, kept, reduced, kept
            {{n, 1, 2}, {0, 1}},        // reduced then kept with a size-1 axis between
            {{n, 1}, {1}},              // only a size-1 axis: a copy
            {{3, 4, n}, {0, 2}},        // reduced axes inside and outside: the generic loop
        };
        for (std::size_t c = 0; c < cases.size(); ++c) {
            const SumCase& sc = cases[c];
            const std::int64_t numel = shape_numel(sc.shape);
            // Innermost group: reduced (rows, summed in 32 lanes) or kept (exact to the sequential order)?
            std::vector<bool> red(sc.shape.size(), sc.axes.empty());
            for (int a : sc.axes) red[static_cast<std::size_t>(a)] = true;
            bool rows = false, suffix = true, seen_kept = false;
            std::int64_t len = 1;
            for (std::size_t a = sc.shape.size(); a-- > 0;) {
                if (sc.shape[a] == 1) continue;
                if (red[a] && !seen_kept) {
                    rows = true;
                    len *= sc.shape[a];
                } else if (!red[a]) {
                    seen_kept = true;
                } else {
                    suffix = false;
                }
            }
            for (int data = 0; data < 3; ++data) {
                // 0: normal numbers; 1: with specials (NaN, Inf, subnormals); 2: per row (of the
                // innermost reduced axes, else of everything) as many +2^53 as -2^53 and ones
                // between them, shuffled: a one added to ±2^53 is lost (a tie, to even), so the
                // order of the additions decides the (small, exactly representable) result.
                std::mt19937_64 rng(200 + c + 1000 * static_cast<std::uint64_t>(data));
                std::vector<float> f;
                if (data == 0) {
                    std::normal_distribution<float> normal(0.f, 1.f);
                    for (std::int64_t i = 0; i < numel; ++i) f.push_back(normal(rng));
                } else if (data == 1) {
                    f = make_f32(numel, 100 + c);
                } else {
                    const std::int64_t row = rows && suffix && len > 0 ? len : std::max<std::int64_t>(numel, 1);
                    for (std::int64_t r0 = 0; r0 < numel; r0 += row) {
                        std::vector<float> part;
                        const std::int64_t pairs = row / 4;
                        for (std::int64_t i = 0; i < row; ++i) part.push_back(i < pairs ? 0x1p53f : i < 2 * pairs ? -0x1p53f : 1.f);
                        std::shuffle(part.begin(), part.end(), rng);
                        f.insert(f.end(), part.begin(), part.end());
                    }
                }
                for (const DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
                    if (data == 2 && dt == DType::f16) continue;  // 2^53 is Inf in f16
                    const Tensor x = tensor_of(f, sc.shape).to(dt);
                    for (bool keepdim : {false, true}) {
                        std::ostringstream what;
                        what << "sum of " << dtype_name(dt) << " " << shape_str(sc.shape) << " over {";
                        for (int a : sc.axes) what << a << ",";
                        what << "} keepdim=" << keepdim << " data=" << data;
                        INFO(what.str());
                        const Tensor seq = sequential_sum(x, sc.axes, keepdim);
                        std::vector<bool> any_nan(static_cast<std::size_t>(seq.numel()), true);  // results involving NaN: any NaN
                        check_all_isas([&] { return reduce_sum(x, sc.axes, keepdim); }, any_nan, what.str());
                        testing::IsaGuard guard;
                        simd::force(simd::Isa::scalar);
                        const Tensor got = reduce_sum(x, sc.axes, keepdim);
                        if (!rows || !suffix || dt == DType::f64 || len < simd_reduce::kLanes) {
                            // Innermost axes kept, the generic loop, f64, or rows shorter than one
                            // set of lanes: exactly the sequential sums.
                            check_same(got, seq, any_nan, what.str() + " vs sequential");
                        } else {
                            check_same(got, lanes_row_sums(x, len, seq.shape()), any_nan, what.str() + " vs 32 lanes");
                            if (data == 0) {  // no cancellation: within the documented bound of the sequential sums
                                const std::vector<double> g = got.values(), s = seq.values(), xv = x.values();
                                for (std::size_t i = 0; i < g.size(); ++i) {
                                    double mag = 0;
                                    for (std::int64_t j = 0; j < len; ++j) mag += std::fabs(xv[i * len + j]);
                                    const double tol = 2 * len * 0x1p-53 * mag +
                                                       dtype_epsilon(dt) * std::max(std::fabs(g[i]), std::fabs(s[i]));
                                    CHECK(std::fabs(g[i] - s[i]) <= tol);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

namespace {

// The index rule of argmax/argmin written as the plainest loop: the first NaN if the row
// has one, else the first element no other element beats.
std::int64_t first_extreme(const std::vector<float>& row, bool largest) {
    for (std::size_t i = 0; i < row.size(); ++i)
        if (std::isnan(row[i])) return static_cast<std::int64_t>(i);
    for (std::size_t i = 0; i < row.size(); ++i) {
        bool beaten = false;
        for (float v : row) beaten = beaten || (largest ? v > row[i] : v < row[i]);
        if (!beaten) return static_cast<std::int64_t>(i);
    }
    return -1;
}

// How many rows of `x` ([rows, len]) get an index other than the rule's.
std::int64_t wrong_rows(const std::vector<float>& x, std::int64_t len, const std::vector<std::int64_t>& got, bool largest) {
    std::int64_t wrong = 0;
    for (std::size_t r = 0; r < got.size(); ++r) {
        const std::vector<float> row(x.begin() + static_cast<std::ptrdiff_t>(r) * len,
                                     x.begin() + static_cast<std::ptrdiff_t>(r + 1) * len);
        wrong += got[r] != first_extreme(row, largest);
    }
    return wrong;
}

}  // namespace

TEST_CASE("argmax/argmin row kernels: the first extreme, ties, -0/+0, infinities and NaN at every instruction set",
          "[simd][reduce]") {
    std::mt19937 rng(11);
    const float pool[] = {-1.f, 0.f, -0.f, 2.f, 2.f, 0.5f, INFINITY, -INFINITY, 3.f, -3.f};
    for (std::int64_t len : {1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 64, 100, 257}) {
        const std::int64_t rows = 24;
        std::vector<float> x(static_cast<std::size_t>(rows * len));
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t j = 0; j < len; ++j) {
                float& v = x[static_cast<std::size_t>(r * len + j)];
                v = r % 3 == 0 ? pool[rng() % std::size(pool)]  // many ties
                               : std::uniform_real_distribution<float>(-1, 1)(rng);
                if (r % 4 == 1 && rng() % (len + 1) < 2) v = NAN;  // a NaN now and then, anywhere
            }
        const Tensor t = Tensor::from({rows, len}, std::vector<double>(x.begin(), x.end()), DType::f32);
        for (simd::Isa isa : tg::testing::tested_isas()) {
            simd::force(isa);
            INFO(simd::isa_name(isa) << ", rows of " << len);
            for (bool largest : {true, false}) {
                const Tensor idx = largest ? argmax(t, 1) : argmin(t, 1);
                std::vector<std::int64_t> got;
                for (double v : idx.values()) got.push_back(static_cast<std::int64_t>(v));
                CHECK(wrong_rows(x, len, got, largest) == 0);
                // The check catches a planted mistake: the last index on ties instead of the first.
                if (len >= 16) {
                    std::vector<std::int64_t> last = got;
                    for (std::size_t r = 0; r < last.size(); ++r) {
                        const float* row = x.data() + r * static_cast<std::size_t>(len);
                        if (std::isnan(row[last[r]])) continue;
                        for (std::int64_t j = len - 1; j > last[r]; --j)
                            if (row[j] == row[last[r]]) {
                                last[r] = j;
                                break;
                            }
                    }
                    if (last != got) CHECK(wrong_rows(x, len, last, largest) > 0);
                }
            }
        }
        simd::force(simd::available().back());
    }
}

TEST_CASE("softplus in f32 is within 3 ulp of the f64 value, at every instruction set", "[simd][elementwise]") {
    std::vector<float> xs;
    for (float x = -100.0f; x <= 100.0f; x += 0.0173f) xs.push_back(x);
    for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, -103.0f, 104.0f, 1e30f, -1e30f}) xs.push_back(x);
    const Tensor t = Tensor::from({static_cast<std::int64_t>(xs.size())}, std::vector<double>(xs.begin(), xs.end()), DType::f32);
    for (simd::Isa isa : tg::testing::tested_isas()) {
        simd::force(isa);
        const std::vector<double> got = softplus(t).values();
        double worst = 0;
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const double x = xs[i], want = std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
            const float w = static_cast<float>(want);
            const double ulp = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
            if (want > 1e-37) worst = std::max(worst, std::fabs(got[i] - want) / ulp);  // (below: subnormal results)
        }
        INFO(simd::isa_name(isa));
        CHECK(worst <= 3.0);  // measured 2.3: Exp's ulp and the series' rounding
    }
    simd::force(simd::available().back());
    const Tensor specials = Tensor::from({3}, {INFINITY, -INFINITY, NAN}, DType::f32);
    const std::vector<double> sv = softplus(specials).values();
    CHECK(sv[0] == INFINITY);
    CHECK(sv[1] == 0);
    CHECK(std::isnan(sv[2]));
}
