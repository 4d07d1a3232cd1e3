// The xsimd bodies of tapegrad/ops/elementwise_kernels.hpp, templated on the architecture and element
// type; included only by the per-architecture translation units (ops/elementwise.avx2.cpp,
// ops/elementwise.avx512.cpp).
#pragma once
#include <cstdint>

#include <xsimd/xsimd.hpp>

#include "tapegrad/ops/elementwise_kernels.hpp"
#include "tapegrad/ops/functors.hpp"

// GCC 12's AVX-512 intrinsics seed their pass-through operand with a self-initialised
// variable (_mm512_undefined_*), which -Wmaybe-uninitialized reports once inlined here
// (GCC bug 105593, fixed in 12.3); nothing is read uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tg::simd_ew {

// The value of v as a register the compiler cannot see through: a product passed through it
// is rounded on its own instead of being fused with the following add into an FMA (these
// units are compiled with -mfma and GCC contracts a·b + c by default, also across xsimd's
// operators; the scalar path, compiled without FMA, rounds twice). Without it GCC 12 emits
// vfmadd here and the affine checks of tests/test_simd_kernels.cpp fail.
template <class V>
inline V opaque(V v) {
    typename V::register_type r = v;
    asm("" : "+v"(r));
    return V(r);
}

// out[k] = f(x[k]) (and f(x[k], y[k])) for whole vectors, two vectors per iteration.
template <class V, class T, class F>
std::int64_t map1(const T* x, T* out, std::int64_t n, F f) {
    constexpr std::int64_t W = V::size;
    std::int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        const V r0 = f(V::load_unaligned(x + i)), r1 = f(V::load_unaligned(x + i + W));
        r0.store_unaligned(out + i);
        r1.store_unaligned(out + i + W);
    }
    for (; i + W <= n; i += W) f(V::load_unaligned(x + i)).store_unaligned(out + i);
    return i;
}

template <class V, class T, class F>
std::int64_t map2(const T* x, const T* y, T* out, std::int64_t n, F f) {
    constexpr std::int64_t W = V::size;
    std::int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        const V r0 = f(V::load_unaligned(x + i), V::load_unaligned(y + i));
        const V r1 = f(V::load_unaligned(x + i + W), V::load_unaligned(y + i + W));
        r0.store_unaligned(out + i);
        r1.store_unaligned(out + i + W);
    }
    for (; i + W <= n; i += W) f(V::load_unaligned(x + i), V::load_unaligned(y + i)).store_unaligned(out + i);
    return i;
}

template <class Arch, class T>
std::int64_t binary(Bin op, const T* a, const T* b, T* out, std::int64_t n) {
    using V = xsimd::batch<T, Arch>;
    switch (op) {
        case Bin::add: return map2<V>(a, b, out, n, [](V x, V y) { return x + y; });
        case Bin::sub: return map2<V>(a, b, out, n, [](V x, V y) { return x - y; });
        case Bin::mul: return map2<V>(a, b, out, n, [](V x, V y) { return x * y; });
        case Bin::div: return map2<V>(a, b, out, n, [](V x, V y) { return x / y; });
        case Bin::relu_grad: return map2<V>(a, b, out, n, [](V x, V y) { return xsimd::select(y <= V(T(0)), x * V(T(0)), x); });
    }
    return 0;
}

template <class Arch, class T>
std::int64_t binary_scalar(Bin op, const T* a, T b, T* out, std::int64_t n) {
    using V = xsimd::batch<T, Arch>;
    const V vb(b);
    switch (op) {
        case Bin::add: return map1<V>(a, out, n, [vb](V x) { return x + vb; });
        case Bin::sub: return map1<V>(a, out, n, [vb](V x) { return x - vb; });
        case Bin::mul: return map1<V>(a, out, n, [vb](V x) { return x * vb; });
        case Bin::div: return map1<V>(a, out, n, [vb](V x) { return x / vb; });
        case Bin::relu_grad:
            if (b <= T(0)) return map1<V>(a, out, n, [](V x) { return x * V(T(0)); });
            return map1<V>(a, out, n, [](V x) { return x; });
    }
    return 0;
}

template <class Arch, class T>
std::int64_t affine(const T* x, T scale, T shift, T* out, std::int64_t n) {
    using V = xsimd::batch<T, Arch>;
    const V s(scale), b(shift);
    return map1<V>(x, out, n, [s, b](V v) { return opaque(v * s) + b; });
}

template <class Arch, class T>
std::int64_t adam(T* w, const T* g, T* m, T* v, std::int64_t n, const AdamStep<T>& c) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    const V lr(c.lr), b1(c.b1), b2(c.b2), eps(c.eps), k1(c.k1), k2(c.k2), wd(c.wd), shrink(c.shrink);
    const V c1(T(1) - c.b1), c2(T(1) - c.b2);
    std::int64_t i = 0;
    for (; i + W <= n; i += W) {
        const V wi = V::load_unaligned(w + i);
        const V p = opaque(shrink * wi);
        const V d = V::load_unaligned(g + i) + opaque(wd * wi);
        const V mi = opaque(b1 * V::load_unaligned(m + i)) + opaque(c1 * d);
        const V vi = opaque(b2 * V::load_unaligned(v + i)) + opaque(opaque(c2 * d) * d);
        mi.store_unaligned(m + i);
        vi.store_unaligned(v + i);
        (p - lr * (mi / k1) / (xsimd::sqrt(vi / k2) + eps)).store_unaligned(w + i);
    }
    return i;
}

template <class Arch, class T>
constexpr Kernels<T> kernels{binary<Arch, T>, binary_scalar<Arch, T>, affine<Arch, T>, adam<Arch, T>};

}  // namespace tg::simd_ew

// Defines the tables of tapegrad/ops/elementwise_kernels.hpp for one architecture (once per arch .cpp).
#define TG_MAP_INSTANCE(F, T, SUFFIX) template std::int64_t tg::simd_ew::map_##SUFFIX<F, T>(const F&, const T*, T*, std::int64_t);
#define TG_MAP_avx2(F, T) TG_MAP_INSTANCE(F, T, avx2)
#define TG_MAP_avx512(F, T) TG_MAP_INSTANCE(F, T, avx512)
#define TG_INSTANTIATE_ELEMENTWISE(ARCH, SUFFIX)                                     \
    template <class F, class T>                                                      \
    std::int64_t tg::simd_ew::map_##SUFFIX(const F& f, const T* x, T* out, std::int64_t n) { \
        return map1<xsimd::batch<T, ARCH>>(x, out, n, f);                           \
    }                                                                                \
    TG_VECTOR_FUNCTORS(TG_MAP_##SUFFIX)                                              \
    const tg::simd_ew::Kernels<float> tg::simd_ew::f32_##SUFFIX = kernels<ARCH, float>; \
    const tg::simd_ew::Kernels<double> tg::simd_ew::f64_##SUFFIX = kernels<ARCH, double>;
