// The element-wise ops as functors: ONE struct per op serves a scalar T (the reference, and
// the tail of every vector loop) and, where the op has a vector form, an xsimd::batch<T, A>.
// `vector<T>` says for which element types the batch form exists; the vector loops of
// tapegrad/ops/elementwise_kernel.hpp are instantiated for the listed (functor, type) pairs in the
// per-ISA units (ops/elementwise.avx2.cpp, ops/elementwise.avx512.cpp) and picked at run time
// by vector_map (tapegrad/ops/elementwise.hpp).
//
// Every lane equals the scalar expression bit for bit, on every instruction set: the same
// comparisons and selects, IEEE operations that round once (+ − × ÷ √), and fused
// multiply-adds written as fma() in both forms (std::fma is correctly rounded, as the FMA
// instruction is). A batch product is never followed by a plain add (the ISA units are compiled
// with -mfma and GCC would contract it). Ops whose only good form is libm's (log, sin, cos,
// pow, f64 exp and tanh) have no batch form.
//
// Adding an element-wise op: a functor here (+ its line in TG_VECTOR_FUNCTORS if it has a batch
// form), the eager function (tapegrad/ops/math.hpp) that maps it, and its gradient (autograd/ops.cpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

namespace tg::fn {

// a·b + c rounded once, for a batch. xsimd 8.1 has no AVX-512 fma kernel: its generic one is
// a·b + c, which rounds twice unless the compiler happens to contract it (GCC does at -O2,
// not at -O1), so AVX-512 takes the intrinsic.
template <class T, class A>
xsimd::batch<T, A> fused(xsimd::batch<T, A> a, xsimd::batch<T, A> b, xsimd::batch<T, A> c) {
#if defined(__AVX512F__)
    if constexpr (sizeof(typename xsimd::batch<T, A>::register_type) == 64) {
        if constexpr (std::is_same_v<T, float>) return _mm512_fmadd_ps(a, b, c);
        else return _mm512_fmadd_pd(a, b, c);
    } else
#endif
        return xsimd::fma(a, b, c);
}

template <class V>
struct is_batch : std::false_type {};
template <class T, class A>
struct is_batch<xsimd::batch<T, A>> : std::true_type {};

// Integer add/sub/mul/neg wrap around (two's complement) as in PyTorch, without signed overflow.
template <class T>
T wrap(std::make_unsigned_t<T> v) {
    return static_cast<T>(v);
}
template <class T>
using U = std::make_unsigned_t<T>;

struct Neg {
    template <class T>
    static constexpr bool vector = std::is_floating_point_v<T>;
    template <class T>
    T operator()(T x) const {
        if constexpr (std::is_integral_v<T>) return wrap<T>(U<T>(0) - static_cast<U<T>>(x));
        else return -x;
    }
    // The sign bit flipped, as the scalar -x does (NaN and ±0 included). Not xsimd's unary
    // minus: xsimd 8.1 computes it as 0 - x for AVX-512, which turns +0 into +0.
    template <class T, class A>
    xsimd::batch<T, A> operator()(xsimd::batch<T, A> x) const { return x ^ xsimd::batch<T, A>(T(-0.0)); }
};

struct Abs {
    template <class T>
    static constexpr bool vector = std::is_floating_point_v<T>;
    template <class T>
    T operator()(T x) const {
        if constexpr (std::is_integral_v<T>) return x < 0 ? Neg{}(x) : x;
        else return std::fabs(x);
    }
    template <class T, class A>
    xsimd::batch<T, A> operator()(xsimd::batch<T, A> x) const { return xsimd::abs(x); }  // clears the sign bit
};

// 1, 0 or −1; NaN stays NaN (the subgradient of abs uses it: sign(0) = 0).
struct Sign {
    template <class T>
    static constexpr bool vector = false;
    template <class T>
    T operator()(T x) const { return x > T(0) ? T(1) : x < T(0) ? T(-1) : x == T(0) ? T(0) : x; }
};

// x < 0 ? 0 : x: NaN and −0 pass through (PyTorch's relu(NaN) is NaN, relu(−0) is −0).
struct Relu {
    template <class T>
    static constexpr bool vector = std::is_floating_point_v<T>;
    template <class T>
    T operator()(T x) const { return x < T(0) ? T(0) : x; }
    template <class T, class A>
    xsimd::batch<T, A> operator()(xsimd::batch<T, A> x) const {
        const xsimd::batch<T, A> zero(T(0));
        return xsimd::select(x < zero, zero, x);
    }
};

// x > 0 ? x : slope·x (NaN: slope·NaN = NaN).
template <class S>
struct LeakyRelu {
    S slope;
    template <class T>
    static constexpr bool vector = std::is_floating_point_v<T>;
    template <class T>
    T operator()(T x) const { return x > T(0) ? x : static_cast<T>(slope) * x; }
    template <class T, class A>
    xsimd::batch<T, A> operator()(xsimd::batch<T, A> x) const {
        return xsimd::select(x > xsimd::batch<T, A>(T(0)), x, xsimd::batch<T, A>(static_cast<T>(slope)) * x);
    }
};

// x > 0 ? 1 : x <= 0 ? below : at_nan: the derivative of relu (below 0, at_nan 1: PyTorch
// passes the gradient at NaN) and leaky_relu (below = at_nan = slope).
template <class S>
struct Step {
    S below, at_nan;
    template <class T>
    static constexpr bool vector = std::is_floating_point_v<T>;
    template <class T>
    T operator()(T x) const { return x > T(0) ? T(1) : x <= T(0) ? static_cast<T>(below) : static_cast<T>(at_nan); }
    template <class T, class A>
    xsimd::batch<T, A> operator()(xsimd::batch<T, A> x) const {
        using B = xsimd::batch<T, A>;
        const B zero(T(0));
        return xsimd::select(x > zero, B(T(1)), xsimd::select(x <= zero, B(static_cast<T>(below)), B(static_cast<T>(at_nan))));
    }
};

// min(max(x, lo), hi) as PyTorch: NaN stays NaN; lo > hi gives hi everywhere.
template <class S>
struct Clamp {
    S lo, hi;
    template <class T>
    static constexpr bool vector = std::is_floating_point_v<T>;
    template <class T>
    T operator()(T x) const {
        const T l = static_cast<T>(lo), h = static_cast<T>(hi);
        const T t = x < l ? l : x;
        return t > h ? h : t;
    }
    template <class T, class A>
    xsimd::batch<T, A> operator()(xsimd::batch<T, A> x) const {
        const xsimd::batch<T, A> l(static_cast<T>(lo)), h(static_cast<T>(hi));
        const xsimd::batch<T, A> t = xsimd::select(x < l, l, x);
        return xsimd::select(t > h, h, t);
    }
};

struct Sqrt {
    template <class T>
    static constexpr bool vector = std::is_floating_point_v<T>;
    template <class T>
    T operator()(T x) const { return std::sqrt(x); }
    template <class T, class A>
    xsimd::batch<T, A> operator()(xsimd::batch<T, A> x) const { return xsimd::sqrt(x); }
};

// f32 is computed in f64 and rounded once (1/√x in f32 rounds twice and is off by an ulp
// at times; BatchNorm's composed form, used by SyncBatchNorm, must match the fused one), so
// only f64 has a vector form.
struct Rsqrt {
    template <class T>
    static constexpr bool vector = std::is_same_v<T, double>;
    template <class T>
    T operator()(T x) const { return static_cast<T>(1.0 / std::sqrt(static_cast<double>(x))); }
    template <class T, class A>
    xsimd::batch<T, A> operator()(xsimd::batch<T, A> x) const { return xsimd::batch<T, A>(T(1)) / xsimd::sqrt(x); }
};

// e^x. f64: std::exp. f32: our own, the same steps in both forms, so it is vectorised and
// identical on every instruction set: n = round(x·log2 e); r = x − n·ln 2 (two fma, Cody-Waite);
// e^r by the degree-6 Cephes polynomial in Horner form with fma; times 2^n as two exact powers
// of two (so subnormal results round once). x is clamped to [−104, 89] first (beyond, the
// result is 0 or Inf anyway); NaN gives NaN. Max error versus the correctly rounded e^x over a
// sweep of every 61st f32 in [−104, 89]: see tests/test_tensor_math.cpp ("exp ulp", 1 ulp).
struct Exp {
    template <class T>
    static constexpr bool vector = std::is_same_v<T, float>;

    static constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860682030941723212e-6f;
    static constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                    4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

    template <class T>
    T operator()(T x) const {
        if constexpr (!std::is_same_v<T, float>) {
            return std::exp(x);
        } else {
            if (x != x) return x;
            const float xc = x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x;
            const float n = std::nearbyint(xc * kLog2e);
            float r = std::fma(-n, kLn2Hi, xc);
            r = std::fma(-n, kLn2Lo, r);
            float p = kP[0];
            for (int i = 1; i < 6; ++i) p = std::fma(p, r, kP[i]);
            const float r2 = r * r;
            const float y = std::fma(p, r2, r) + 1.0f;
            const std::int32_t ni = static_cast<std::int32_t>(n);
            const std::int32_t h = ni >> 1;
            return y * pow2(h) * pow2(ni - h);
        }
    }
    template <class A>
    xsimd::batch<float, A> operator()(xsimd::batch<float, A> x) const {
        using V = xsimd::batch<float, A>;
        using I = xsimd::batch<std::int32_t, A>;
        const auto nan = xsimd::isnan(x);  // (xsimd's x != x is an ordered compare: false for NaN)
        V xc = xsimd::select(x < V(-104.0f), V(-104.0f), x);
        xc = xsimd::select(xc > V(89.0f), V(89.0f), xc);
        xc = xsimd::select(nan, V(0.0f), xc);
        const V n = xsimd::nearbyint(xc * V(kLog2e));
        V r = fused(-n, V(kLn2Hi), xc);
        r = fused(-n, V(kLn2Lo), r);
        V p(kP[0]);
        for (int i = 1; i < 6; ++i) p = fused(p, r, V(kP[i]));
        const V r2 = r * r;
        const V y = fused(p, r2, r) + V(1.0f);
        const I ni = xsimd::to_int(n);
        const I h = ni >> 1;
        const V s1 = xsimd::bitwise_cast<V>((h + I(127)) << 23), s2 = xsimd::bitwise_cast<V>((ni - h + I(127)) << 23);
        return xsimd::select(nan, x, y * s1 * s2);
    }

private:
    static float pow2(std::int32_t e) {  // 2^e for e in [−126, 127]
        const std::uint32_t bits = static_cast<std::uint32_t>(e + 127) << 23;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
};

// log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|). In f32, e = Exp's e^-|x| and
// log1p(e) = log(u)·e/(u − 1) with u = 1 + e as rounded (e itself where u = 1), log(u) for u
// in [1, 2] from 2·atanh(s) = 2(s + s³/3 + ... + s¹³/13), s = (u − 1)/(u + 1) <= 1/3: the
// scalar and vector forms do the same operations, so every instruction set gives the same
// bits; within 3 ulp of the exact value (2.3 measured over [-100, 100]).
struct Softplus {
    template <class T>
    static constexpr bool vector = std::is_same_v<T, float>;
    static constexpr float kC[6] = {1.0f / 3, 1.0f / 5, 1.0f / 7, 1.0f / 9, 1.0f / 11, 1.0f / 13};

    template <class T>
    T operator()(T x) const {
        if constexpr (!std::is_same_v<T, float>) {
            return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::fabs(x)));
        } else {
            if (x != x) return x;
            const float e = Exp{}(-std::fabs(x)), u = 1.0f + e;
            const float s = (u - 1.0f) / (u + 1.0f), s2 = s * s;
            float p = kC[5];
            for (int i = 4; i >= 0; --i) p = std::fma(p, s2, kC[i]);
            const float log_u = 2.0f * std::fma(s * s2, p, s);
            const float l1p = u == 1.0f ? e : log_u * (e / (u - 1.0f));
            return (x > 0.0f ? x : 0.0f) + l1p;
        }
    }
    template <class A>
    xsimd::batch<float, A> operator()(xsimd::batch<float, A> x) const {
        using V = xsimd::batch<float, A>;
        const V one(1.0f), zero(0.0f);
        const V e = Exp{}(xsimd::select(x > zero, -x, x)), u = one + e;  // -|x| (NaN stays NaN)
        const V s = (u - one) / (u + one), s2 = s * s;
        V p(kC[5]);
        for (int i = 4; i >= 0; --i) p = fused(p, s2, V(kC[i]));
        const V log_u = V(2.0f) * fused(s * s2, p, s);
        const V l1p = xsimd::select(u == one, e, log_u * (e / (u - one)));
        return xsimd::select(xsimd::isnan(x), x, xsimd::select(x > zero, x, zero) + l1p);
    }
};

struct Log {
    template <class T>
    static constexpr bool vector = false;
    template <class T>
    T operator()(T x) const { return std::log(x); }
};
struct Sin {
    template <class T>
    static constexpr bool vector = false;
    template <class T>
    T operator()(T x) const { return std::sin(x); }
};
struct Cos {
    template <class T>
    static constexpr bool vector = false;
    template <class T>
    T operator()(T x) const { return std::cos(x); }
};
// tanh x. f64: std::tanh. f32: Cephes' tanhf on a = |x|, in both forms with the same
// operations (so every instruction set gives the same bits): a + a·z·P(z), z = a², for
// a < 0.625, else 1 − 2/(e^{2a} + 1) with Exp's e^y (∞ past 44.5: 1); then x's sign (−0 stays
// −0, NaN stays NaN). Error against tanh in f64: tests/test_tensor_math.cpp ("tanh and
// sigmoid ulp", 1.3 ulp).
struct Tanh {
    template <class T>
    static constexpr bool vector = std::is_same_v<T, float>;
    static constexpr float kSmall = 0.625f;
    static constexpr float kP[5] = {-5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f,
                                    -3.33332819422e-1f};

    template <class T>
    T operator()(T x) const {
        if constexpr (!std::is_same_v<T, float>) {
            return std::tanh(x);
        } else {
            const float a = std::fabs(x), z = a * a;
            float p = kP[0];
            for (int i = 1; i < 5; ++i) p = std::fma(p, z, kP[i]);
            const float t = a < kSmall ? std::fma(p * z, a, a) : 1.0f - 2.0f / (Exp{}(a + a) + 1.0f);
            return std::copysign(t, x);
        }
    }
    template <class A>
    xsimd::batch<float, A> operator()(xsimd::batch<float, A> x) const {
        using V = xsimd::batch<float, A>;
        const V a = xsimd::abs(x), z = a * a, one(1.0f), sign(-0.0f);
        V p(kP[0]);
        for (int i = 1; i < 5; ++i) p = fused(p, z, V(kP[i]));
        const V t = xsimd::select(a < V(kSmall), fused(p * z, a, a), one - V(2.0f) / (Exp{}(a + a) + one));
        return (t & ~sign) | (x & sign);  // std::copysign(t, x)
    }
};
// 1 / (1 + e^-x), never exponentiating a positive number: e = e^{-|x|}, then 1/(1 + e) for
// x >= 0 and e/(1 + e) below. f64: std::exp; f32: Exp, in both forms the same operations
// (2.1 ulp from the f64 function: "tanh and sigmoid ulp").
struct Sigmoid {
    template <class T>
    static constexpr bool vector = std::is_same_v<T, float>;
    template <class T>
    T operator()(T x) const {
        const T e = exp_minus_abs(x);
        return x >= T(0) ? T(1) / (T(1) + e) : e / (T(1) + e);
    }
    template <class A>
    xsimd::batch<float, A> operator()(xsimd::batch<float, A> x) const {
        using V = xsimd::batch<float, A>;
        const V zero(0.0f), one(1.0f);
        const V e = Exp{}(xsimd::select(x > zero, -x, x));  // -|x| (NaN stays NaN)
        return xsimd::select(x >= zero, one / (one + e), e / (one + e));
    }

private:
    template <class T>
    static T exp_minus_abs(T x) {
        if constexpr (std::is_same_v<T, float>) return Exp{}(x > 0.0f ? -x : x);
        else return std::exp(x > T(0) ? -x : x);
    }
};
// x·x: pow(x, 2) rounded once (as the correctly rounded x² is).
struct Square {
    template <class T>
    static constexpr bool vector = std::is_floating_point_v<T>;
    template <class T>
    T operator()(T x) const { return x * x; }
    template <class T, class A>
    xsimd::batch<T, A> operator()(xsimd::batch<T, A> x) const { return x * x; }
};
template <class S>
struct PowScalar {
    S p;
    template <class T>
    static constexpr bool vector = false;
    template <class T>
    T operator()(T x) const { return static_cast<T>(std::pow(x, static_cast<T>(p))); }
};

// Binary ops. Integer add/sub/mul wrap; div is only used on floats (true division).
struct Add {
    template <class T>
    T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T>) return wrap<T>(static_cast<U<T>>(a) + static_cast<U<T>>(b));
        else return a + b;
    }
};
struct Sub {
    template <class T>
    T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T>) return wrap<T>(static_cast<U<T>>(a) - static_cast<U<T>>(b));
        else return a - b;
    }
};
struct Mul {
    template <class T>
    T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T>) return wrap<T>(static_cast<U<T>>(a) * static_cast<U<T>>(b));
        else return a * b;
    }
};
struct Pow {
    template <class T>
    T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T>) {  // integer powers as PyTorch: b < 0 gives 0 unless a is ±1
            if (b < 0) return a == 1 ? T(1) : a == -1 ? ((b & 1) ? T(-1) : T(1)) : T(0);
            U<T> r = 1, base = static_cast<U<T>>(a);
            for (T e = b; e > 0; e >>= 1, base *= base)
                if (e & 1) r *= base;
            return wrap<T>(r);
        } else {
            return std::pow(a, b);
        }
    }
};

// Comparisons: IEEE (every comparison with NaN is false except ne).
struct Eq { template <class T> bool operator()(T a, T b) const { return a == b; } };
struct Ne { template <class T> bool operator()(T a, T b) const { return a != b; } };
struct Lt { template <class T> bool operator()(T a, T b) const { return a < b; } };
struct Le { template <class T> bool operator()(T a, T b) const { return a <= b; } };
struct Gt { template <class T> bool operator()(T a, T b) const { return a > b; } };
struct Ge { template <class T> bool operator()(T a, T b) const { return a >= b; } };

}  // namespace tg::fn

// The (functor, element type) pairs that have vector loops, instantiated once per ISA.
#define TG_VECTOR_FUNCTORS(X)                                                                      \
    X(tg::fn::Neg, float) X(tg::fn::Neg, double) X(tg::fn::Abs, float) X(tg::fn::Abs, double)      \
    X(tg::fn::Relu, float) X(tg::fn::Relu, double) X(tg::fn::Sqrt, float) X(tg::fn::Sqrt, double)  \
    X(tg::fn::Rsqrt, double) X(tg::fn::Exp, float) X(tg::fn::Softplus, float) X(tg::fn::Tanh, float)            \
    X(tg::fn::Sigmoid, float) X(tg::fn::Square, float) X(tg::fn::Square, double)                     \
    X(tg::fn::Clamp<double>, float) X(tg::fn::Clamp<double>, double) X(tg::fn::LeakyRelu<double>, float) \
    X(tg::fn::LeakyRelu<double>, double) X(tg::fn::Step<double>, float) X(tg::fn::Step<double>, double)
