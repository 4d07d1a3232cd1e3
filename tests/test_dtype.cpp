// f16 and bf16 conversions against an independent oracle: IEEE rounding written with
// frexp/nearbyint on doubles (round to nearest, ties to even, overflow to Inf), plus
// hand-picked bit patterns for the edge cases.
#include <catch2/catch.hpp>

#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tapegrad/core/dtype.hpp"
#include "tapegrad/core/tensor.hpp"

using namespace tg;

namespace {

struct Format {
    const char* name;
    int precision;    // significand bits including the implicit one
    int emin;         // exponent of the smallest normal
    double max_finite;
};
const Format kF16{"f16", 11, -14, 65504.0};
const Format kBF16{"bf16", 8, -126, std::ldexp(2.0 - std::ldexp(1.0, -7), 127)};

// The correctly rounded value of x in the format (nearest, ties to even), as a double.
double oracle_round(double x, const Format& f) {
    if (x == 0 || !std::isfinite(x)) return x;
    int e;
    std::frexp(std::fabs(x), &e);  // |x| = m·2^e, m in [0.5, 1): leading bit has exponent e−1
    const double quantum = std::ldexp(1.0, std::max(e - 1, f.emin) - (f.precision - 1));
    const double r = std::nearbyint(std::fabs(x) / quantum) * quantum;  // FE_TONEAREST: ties to even
    if (r > f.max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
    return std::copysign(r, x);
}

// Decodes bits independently of the library (IEEE layout: sign, exponent, fraction).
double decode(std::uint16_t h, int exp_bits, int frac_bits) {
    const int bias = (1 << (exp_bits - 1)) - 1;
    const bool neg = h >> 15;
    const int e = (h >> frac_bits) & ((1 << exp_bits) - 1);
    const int m = h & ((1 << frac_bits) - 1);
    double v;
    if (e == (1 << exp_bits) - 1) v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else if (e == 0) v = std::ldexp(m, 1 - bias - frac_bits);
    else v = std::ldexp(m + (1 << frac_bits), e - bias - frac_bits);
    return neg ? -v : v;
}
double dec16(std::uint16_t h) { return decode(h, 5, 10); }
double decb16(std::uint16_t h) { return decode(h, 8, 7); }

float bits_f(std::uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

double f16_via_tensor(double x) { return Tensor::from({1}, {x}, DType::f16).values()[0]; }
double bf16_via_tensor(double x) { return Tensor::from({1}, {x}, DType::bf16).values()[0]; }
double f16_via_to(double x) { return Tensor::from({1}, {x}, DType::f64).to(DType::f16).values()[0]; }
double bf16_via_to(double x) { return Tensor::from({1}, {x}, DType::f64).to(DType::bf16).values()[0]; }

bool same(double a, double b) {  // equal including the sign of zero; NaN equals NaN
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
}

}  // namespace

TEST_CASE("f16 and bf16 decode every bit pattern like the IEEE layout says", "[dtype]") {
    REQUIRE(std::fegetround() == FE_TONEAREST);
    int bad16 = 0, badb = 0, bad_rt16 = 0, bad_rtb = 0;
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const auto b = static_cast<std::uint16_t>(h);
        if (!same(f16_to_f32(b), dec16(b))) ++bad16;
        if (!same(bf16_to_f32(b), decb16(b))) ++badb;
        // Every representable value converts back to its own bits (NaNs stay NaN).
        const std::uint16_t r16 = f32_to_f16(f16_to_f32(b)), rb = f32_to_bf16(bf16_to_f32(b));
        if (std::isnan(dec16(b)) ? !std::isnan(dec16(r16)) : r16 != b) ++bad_rt16;
        if (std::isnan(decb16(b)) ? !std::isnan(decb16(rb)) : rb != b) ++bad_rtb;
    }
    CHECK(bad16 == 0);
    CHECK(badb == 0);
    CHECK(bad_rt16 == 0);
    CHECK(bad_rtb == 0);
}

TEST_CASE("f32 to f16/bf16 rounds to nearest even on hand-picked values", "[dtype]") {
    const double u16 = std::ldexp(1.0, -10);  // f16 spacing at 1
    SECTION("ties go to the even neighbour") {
        CHECK(f16_to_f32(f32_to_f16(static_cast<float>(1 + u16 / 2))) == 1.0f);
        CHECK(f16_to_f32(f32_to_f16(static_cast<float>(1 + 3 * u16 / 2))) == static_cast<float>(1 + 2 * u16));
        CHECK(f16_to_f32(f32_to_f16(static_cast<float>(-(1 + 3 * u16 / 2)))) == static_cast<float>(-(1 + 2 * u16)));
        // just above / below a tie
        CHECK(f16_to_f32(f32_to_f16(std::nextafter(static_cast<float>(1 + u16 / 2), 2.0f))) == static_cast<float>(1 + u16));
        CHECK(f16_to_f32(f32_to_f16(std::nextafter(static_cast<float>(1 + 3 * u16 / 2), 0.0f))) == static_cast<float>(1 + u16));
        const double ub = std::ldexp(1.0, -7);  // bf16 spacing at 1
        CHECK(bf16_to_f32(f32_to_bf16(static_cast<float>(1 + ub / 2))) == 1.0f);
        CHECK(bf16_to_f32(f32_to_bf16(static_cast<float>(1 + 3 * ub / 2))) == static_cast<float>(1 + 2 * ub));
        CHECK(bf16_to_f32(f32_to_bf16(std::nextafter(static_cast<float>(1 + ub / 2), 2.0f))) == static_cast<float>(1 + ub));
    }
    SECTION("f16 subnormals and underflow") {
        const double tiny = std::ldexp(1.0, -24);  // smallest f16 subnormal
        CHECK(f32_to_f16(static_cast<float>(tiny)) == 0x0001);
        CHECK(f32_to_f16(static_cast<float>(tiny / 2)) == 0x0000);      // tie with 0: even
        CHECK(f32_to_f16(static_cast<float>(-tiny / 2)) == 0x8000);     // keeps the sign
        CHECK(f32_to_f16(std::nextafter(static_cast<float>(tiny / 2), 1.0f)) == 0x0001);
        CHECK(f32_to_f16(static_cast<float>(1.5 * tiny)) == 0x0002);    // tie 1|2 -> 2
        CHECK(f32_to_f16(static_cast<float>(2.5 * tiny)) == 0x0002);    // tie 2|3 -> 2
        CHECK(f32_to_f16(static_cast<float>(1023 * tiny)) == 0x03ff);   // largest subnormal
        CHECK(f32_to_f16(static_cast<float>(1023.5 * tiny)) == 0x0400); // tie -> smallest normal
        CHECK(f32_to_f16(static_cast<float>(std::ldexp(1.0, -14))) == 0x0400);
        CHECK(f32_to_f16(1e-30f) == 0x0000);
        CHECK(f32_to_f16(bits_f(0x00000001u)) == 0x0000);  // f32 subnormal
        CHECK(f16_to_f32(0x0001) == static_cast<float>(tiny));
        CHECK(f16_to_f32(0x03ff) == static_cast<float>(1023 * tiny));
    }
    SECTION("bf16 subnormals") {
        CHECK(f32_to_bf16(bits_f(0x00010000u)) == 0x0001);
        CHECK(f32_to_bf16(bits_f(0x00008000u)) == 0x0000);  // tie with 0
        CHECK(f32_to_bf16(bits_f(0x00018000u)) == 0x0002);  // tie 1|2 -> 2
        CHECK(f32_to_bf16(bits_f(0x00028000u)) == 0x0002);  // tie 2|3 -> 2
        CHECK(f32_to_bf16(bits_f(0x007f8000u)) == 0x0080);  // tie -> smallest normal
    }
    SECTION("max finite values and overflow to Inf") {
        CHECK(f32_to_f16(65504.0f) == 0x7bff);
        CHECK(f16_to_f32(0x7bff) == 65504.0f);
        CHECK(f32_to_f16(65519.99f) == 0x7bff);
        CHECK(f32_to_f16(65520.0f) == 0x7c00);  // tie between 65504 and 2^16: even is Inf
        CHECK(f32_to_f16(-65520.0f) == 0xfc00);
        CHECK(f32_to_f16(1e10f) == 0x7c00);
        CHECK(f32_to_f16(std::numeric_limits<float>::max()) == 0x7c00);
        CHECK(f32_to_bf16(bits_f(0x7f7f0000u)) == 0x7f7f);  // bf16 max finite
        CHECK(static_cast<double>(bf16_to_f32(0x7f7f)) == kBF16.max_finite);
        CHECK(f32_to_bf16(bits_f(0x7f7f7fffu)) == 0x7f7f);
        CHECK(f32_to_bf16(bits_f(0x7f7f8000u)) == 0x7f80);  // tie: even is Inf
        CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);
        CHECK(f32_to_bf16(-std::numeric_limits<float>::max()) == 0xff80);
    }
    SECTION("NaN and Inf are preserved") {
        const float inf = std::numeric_limits<float>::infinity();
        CHECK(f32_to_f16(inf) == 0x7c00);
        CHECK(f32_to_f16(-inf) == 0xfc00);
        CHECK(f32_to_bf16(inf) == 0x7f80);
        CHECK(f32_to_bf16(-inf) == 0xff80);
        CHECK(std::isinf(f16_to_f32(0x7c00)));
        CHECK(std::isinf(bf16_to_f32(0xff80)));
        // NaNs whose payload lives only in the bits a narrowing drops must not become Inf.
        for (std::uint32_t nb : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7f801fffu, 0x7fffffffu}) {
            INFO("f32 bits " << std::hex << nb);
            CHECK(std::isnan(f16_to_f32(f32_to_f16(bits_f(nb)))));
            CHECK(std::isnan(bf16_to_f32(f32_to_bf16(bits_f(nb)))));
        }
        CHECK(std::isnan(f16_to_f32(0x7e00)));
        CHECK(std::isnan(bf16_to_f32(0x7fc0)));
        CHECK(std::signbit(f16_to_f32(f32_to_f16(-0.0f))));
        CHECK(std::signbit(bf16_to_f32(f32_to_bf16(-0.0f))));
    }
}

TEST_CASE("f32 to f16/bf16 agrees with the oracle on random bit patterns and every tie", "[dtype]") {
    std::mt19937 rng(42);
    int bad16 = 0, badb = 0;
    auto check_one = [&](float f) {
        if (std::isnan(f)) return;
        if (!same(f16_to_f32(f32_to_f16(f)), oracle_round(f, kF16))) ++bad16;
        if (!same(bf16_to_f32(f32_to_bf16(f)), oracle_round(f, kBF16))) ++badb;
    };
    for (int i = 0; i < 200000; ++i) check_one(bits_f(rng()));
    // Concentrate on the f16 range, where random f32 bits rarely land.
    std::uniform_real_distribution<float> mag(-30.0f, 17.0f);
    for (int i = 0; i < 200000; ++i) check_one(std::copysign(std::exp2(mag(rng)), (rng() & 1) ? 1.0f : -1.0f));
    // Every midpoint between neighbouring f16 values, and its two float neighbours.
    for (std::uint32_t h = 0; h < 0x7c00; ++h) {
        const double mid = (dec16(static_cast<std::uint16_t>(h)) + (h + 1 < 0x7c00 ? dec16(static_cast<std::uint16_t>(h + 1)) : 65536.0)) / 2;
        const float fm = static_cast<float>(mid);
        REQUIRE(static_cast<double>(fm) == mid);
        check_one(fm);
        check_one(std::nextafter(fm, 0.0f));
        check_one(std::nextafter(fm, 1e30f));
        check_one(-fm);
    }
    CHECK(bad16 == 0);
    CHECK(badb == 0);
}

TEST_CASE("f64 to f16/bf16 rounds once, not through a float tie", "[dtype]") {
    // x is just above the f16 tie 1 + 2^-11, so it must round up to 1 + 2^-10, though
    // (float)x is the tie itself, which would round down to the even 1.0.
    const double x = 1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
    REQUIRE(static_cast<float>(x) == static_cast<float>(1 + std::ldexp(1.0, -11)));
    const double up = 1 + std::ldexp(1.0, -10);
    CHECK(f16_via_tensor(x) == up);
    CHECK(f16_via_to(x) == up);
    CHECK(f16_via_tensor(-x) == -up);
    CHECK(f16_via_to(-x) == -up);
    // and just below the tie rounds down
    const double y = 1 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40);
    CHECK(f16_via_tensor(y) == 1.0);
    CHECK(f16_via_to(y) == 1.0);

    const double xb = 1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
    REQUIRE(static_cast<float>(xb) == static_cast<float>(1 + std::ldexp(1.0, -8)));
    CHECK(bf16_via_tensor(xb) == 1 + std::ldexp(1.0, -7));
    CHECK(bf16_via_to(xb) == 1 + std::ldexp(1.0, -7));
    // an odd-mantissa tie just above: the float tie would round up, the double is below it
    const double yb = 1 + 3 * std::ldexp(1.0, -8) - std::ldexp(1.0, -40);
    CHECK(bf16_via_tensor(yb) == 1 + std::ldexp(1.0, -7));
    CHECK(bf16_via_to(yb) == 1 + std::ldexp(1.0, -7));

    // f16 overflow threshold 65520 seen from a double
    CHECK(f16_via_tensor(65520.0 - 1e-9) == 65504.0);
    CHECK(f16_via_to(65520.0 - 1e-9) == 65504.0);
    CHECK(std::isinf(f16_via_tensor(65520.0)));
    CHECK(std::isinf(f16_via_to(1e300)));
    CHECK(std::isinf(bf16_via_to(-1e300)));
    CHECK(std::isnan(f16_via_to(std::numeric_limits<double>::quiet_NaN())));
    CHECK(std::isnan(bf16_via_tensor(std::numeric_limits<double>::quiet_NaN())));
    CHECK(std::isinf(bf16_via_tensor(std::numeric_limits<double>::infinity())));
    // f16 subnormal tie from a double: 2^-25 + tiny rounds up to 2^-24
    CHECK(f16_via_tensor(std::ldexp(1.0, -25) + std::ldexp(1.0, -60)) == std::ldexp(1.0, -24));
    CHECK(f16_via_to(std::ldexp(1.0, -25) + std::ldexp(1.0, -60)) == std::ldexp(1.0, -24));
    CHECK(f16_via_to(std::ldexp(1.0, -25)) == 0.0);
}

TEST_CASE("f64 to f16/bf16 agrees with the oracle on random doubles", "[dtype]") {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> mag(-140.0, 130.0);
    std::vector<double> xs;
    for (int i = 0; i < 50000; ++i) {
        const double base = std::exp2(mag(rng));
        xs.push_back((rng() & 1) ? base : -base);
    }
    // doubles a few ulps around f16 / bf16 ties
    for (int i = 0; i < 20000; ++i) {
        // Skip values that rounded to 0 or Inf: ilogb of those is INT_MIN / INT_MAX.
        const double t = oracle_round(std::exp2(mag(rng) / 8), kF16);
        if (t > 0 && std::isfinite(t)) {
            const double tie = t + std::ldexp(1.0, std::ilogb(t) - 11);
            xs.push_back(std::nextafter(tie, 0.0));
            xs.push_back(std::nextafter(tie, 1e300));
            xs.push_back(tie);
        }
        const double tb = oracle_round(std::exp2(mag(rng)), kBF16);
        if (tb > 0 && std::isfinite(tb)) {
            const double tieb = tb + std::ldexp(1.0, std::ilogb(tb) - 8);
            xs.push_back(std::nextafter(tieb, 0.0));
            xs.push_back(std::nextafter(tieb, 1e300));
        }
    }
    const Tensor t = Tensor::from({static_cast<std::int64_t>(xs.size())}, xs, DType::f64);
    const std::vector<double> a16 = Tensor::from(t.shape(), xs, DType::f16).values(), b16 = t.to(DType::f16).values();
    const std::vector<double> abf = Tensor::from(t.shape(), xs, DType::bf16).values(), bbf = t.to(DType::bf16).values();
    int bad_from16 = 0, bad_to16 = 0, bad_frombf = 0, bad_tobf = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        bad_from16 += !same(a16[i], oracle_round(xs[i], kF16));
        bad_to16 += !same(b16[i], oracle_round(xs[i], kF16));
        bad_frombf += !same(abf[i], oracle_round(xs[i], kBF16));
        bad_tobf += !same(bbf[i], oracle_round(xs[i], kBF16));
    }
    CHECK(bad_from16 == 0);
    CHECK(bad_to16 == 0);
    CHECK(bad_frombf == 0);
    CHECK(bad_tobf == 0);
}

TEST_CASE("dtype names, sizes and epsilons", "[dtype]") {
    for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64})
        CHECK(dtype_from_name(dtype_name(t), "dtype") == t);
    CHECK(dtype_size(DType::f16) == 2);
    CHECK(dtype_size(DType::bf16) == 2);
    CHECK(dtype_size(DType::i64) == 8);
    CHECK(dtype_epsilon(DType::f16) == std::ldexp(1.0, -10));
    CHECK(dtype_epsilon(DType::bf16) == std::ldexp(1.0, -7));
    CHECK(dtype_epsilon(DType::f32) == std::ldexp(1.0, -23));
    CHECK(dtype_epsilon(DType::f64) == std::ldexp(1.0, -52));
    try {
        dtype_from_name("f8", "dtype");
        FAIL("f8 accepted");
    } catch (const Error& e) {
        CHECK(e.key() == "dtype");
    }
}
