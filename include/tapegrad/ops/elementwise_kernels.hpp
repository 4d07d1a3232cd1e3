// The per-architecture entry points of the vectorised element-wise kernels
// (tapegrad/ops/elementwise_kernel.hpp), one table per instruction set and element type, reached through
// simd::Dispatch. Each kernel handles the first n - n % W elements (W = the
// vector width), writes out[k] for them and returns that count; the caller finishes the rest
// with the same scalar expression, so the per-arch translation units hold nothing but the
// vector loops. Every lane computes exactly what the scalar code computes (no FMA
// contraction, the same comparisons and selects), so the results are equal bit for bit.
#pragma once
#include <cstdint>

#include "tapegrad/core/simd.hpp"

namespace tg::simd_ew {

enum class Bin { add, sub, mul, div, relu_grad };  // relu_grad: b <= 0 ? a·0 : a

// One Adam (or AdamW) step's constants, in the parameter's type: the rate, the moment decays,
// eps, the bias corrections k1 = 1 − b1^t and k2 = 1 − b2^t, the L2 term and AdamW's shrink.
template <class T>
struct AdamStep {
    T lr, b1, b2, eps, k1, k2, wd, shrink;
};

template <class T>
struct Kernels {
    std::int64_t (*binary)(Bin op, const T* a, const T* b, T* out, std::int64_t n);     // a[k] op b[k]
    std::int64_t (*binary_scalar)(Bin op, const T* a, T b, T* out, std::int64_t n);     // a[k] op b
    std::int64_t (*affine)(const T* x, T scale, T shift, T* out, std::int64_t n);       // x[k]·scale + shift, two roundings
    // In place, each rounding as nn::Adam's scalar loop does it: d = g + wd·w;
    // m = b1·m + (1 − b1)·d; v = b2·v + (1 − b2)·d·d; w = shrink·w − lr·(m/k1) / (√(v/k2) + eps).
    std::int64_t (*adam)(T* w, const T* g, T* m, T* v, std::int64_t n, const AdamStep<T>& c);
};

// out[k] = f(x[k]) for whole vectors with functor F's batch form (tapegrad/ops/functors.hpp), for the
// pairs listed in TG_VECTOR_FUNCTORS; the caller finishes the tail with f's scalar form.
template <class F, class T>
std::int64_t map_avx2(const F& f, const T* x, T* out, std::int64_t n);
template <class F, class T>
std::int64_t map_avx512(const F& f, const T* x, T* out, std::int64_t n);

extern const Kernels<float> f32_avx2, f32_avx512, f32_scalar;  // the scalar tables do nothing (count 0)
extern const Kernels<double> f64_avx2, f64_avx512, f64_scalar;

// The tables of every set and element type (ops/elementwise.cpp): dispatch().active<T>().
const simd::TypedDispatch<Kernels>& dispatch();

// The map of functor F on T as a one-entry table per set (the scalar entry maps nothing).
template <class F, class T>
struct Map {
    std::int64_t (*map)(const F& f, const T* x, T* out, std::int64_t n);
};
template <class F, class T>
std::int64_t map_none(const F&, const T*, T*, std::int64_t) { return 0; }
template <class F, class T>
inline constexpr Map<F, T> map_scalar{&map_none<F, T>};
template <class F, class T>
inline constexpr Map<F, T> map_on_avx2{&map_avx2<F, T>};
template <class F, class T>
inline constexpr Map<F, T> map_on_avx512{&map_avx512<F, T>};
template <class F, class T>
inline constexpr simd::Dispatch<Map<F, T>> map_dispatch{map_scalar<F, T>, map_on_avx2<F, T>, map_on_avx512<F, T>};

}  // namespace tg::simd_ew
