// The loops of tapegrad/ops/batch_norm_kernels.hpp, templated on the instruction set they are
// compiled for (a tag only: each translation unit's flags decide the vectors); included by
// ops/batch_norm.cpp (the base set) and ops/batch_norm.{avx2,avx512}.cpp. Every (n, c) is
// one contiguous run of S values; the loops walk those runs, one channel per thread.
#pragma once
#include <algorithm>
#include <cstdint>

#include "tapegrad/core/blas.hpp"
#include "tapegrad/ops/batch_norm_kernels.hpp"

namespace tg::simd_bn::kernel {

// A team for a memory-bound pass over `numel` values: one thread below a few hundred
// thousand (a fork and a barrier cost more), and never more threads than channels.
inline int team_for(std::int64_t numel, std::int64_t C) {
    return std::max(1, std::min<int>(team_size(static_cast<double>(numel), kTeamMinValues), static_cast<int>(C)));
}

template <class Arch, class T>
void moments(const T* x, Ncs d, double* mean, double* var) {
    const double n = static_cast<double>(d.N * d.S);
#pragma omp parallel for num_threads(team_for(d.N * d.C * d.S, d.C)) schedule(static)
    for (std::int64_t c = 0; c < d.C; ++c) {
        double s = 0;
        for (std::int64_t i = 0; i < d.N; ++i) {
            const T* r = x + (i * d.C + c) * d.S;
            T rs = 0;
#pragma omp simd reduction(+ : rs)
            for (std::int64_t j = 0; j < d.S; ++j) rs += r[j];
            s += static_cast<double>(rs);
        }
        const double m = s / n;
        const T mt = static_cast<T>(m);
        double q = 0;  // Σ(x − m)², around the rounded mean, corrected below
        double e = 0;  // Σ(x − m): the rounding of m, exactly removed as e²/n
        for (std::int64_t i = 0; i < d.N; ++i) {
            const T* r = x + (i * d.C + c) * d.S;
            T rq = 0, re = 0;
#pragma omp simd reduction(+ : rq, re)
            for (std::int64_t j = 0; j < d.S; ++j) {
                const T t = r[j] - mt;
                rq += t * t;
                re += t;
            }
            q += static_cast<double>(rq);
            e += static_cast<double>(re);
        }
        mean[c] = m;
        var[c] = std::max(0.0, (q - e * e / n) / n);
    }
}

template <class Arch, bool Relu, class T>
void affine(const T* x, Ncs d, const double* scale, const double* shift, const double* center, T* y) {
#pragma omp parallel for num_threads(team_for(d.N * d.C * d.S, d.C)) schedule(static)
    for (std::int64_t c = 0; c < d.C; ++c) {
        const T a = static_cast<T>(scale[c]), b = shift ? static_cast<T>(shift[c]) : T(0),
                m = center ? static_cast<T>(center[c]) : T(0);
        for (std::int64_t i = 0; i < d.N; ++i) {
            const std::int64_t at = (i * d.C + c) * d.S;
#pragma omp simd
            for (std::int64_t j = 0; j < d.S; ++j) {
                const T v = (x[at + j] - m) * a + b;
                y[at + j] = Relu && v < T(0) ? T(0) : v;  // fn::Relu's rule: NaN and −0 pass
            }
        }
    }
}

// The gradient through a ReLU whose output is r: g where r > 0 or r is NaN (fn::Step's
// rule, as ag::relu's backward), 0 where r <= 0; g itself without a ReLU. (A template
// flag, not a null test, so the loops stay vectorised.)
template <bool Relu, class T>
inline T through_relu(T g, const T* r, std::int64_t k) {
    if constexpr (Relu) return (r[k] > T(0)) | (r[k] != r[k]) ? g : T(0);
    else return g;
}

template <class Arch, bool Relu, class T>
void sums(const T* g, const T* x, const T* r, Ncs d, const double* center, double* sg, double* sgx) {
#pragma omp parallel for num_threads(team_for(d.N * d.C * d.S, d.C)) schedule(static)
    for (std::int64_t c = 0; c < d.C; ++c) {
        const T m = center ? static_cast<T>(center[c]) : T(0);
        double a = 0, b = 0;
        for (std::int64_t i = 0; i < d.N; ++i) {
            const std::int64_t at = (i * d.C + c) * d.S;
            T ra = 0, rb = 0;
#pragma omp simd reduction(+ : ra, rb)
            for (std::int64_t j = 0; j < d.S; ++j) {
                const T gj = through_relu<Relu>(g[at + j], r, at + j);
                ra += gj;
                rb += gj * (x[at + j] - m);
            }
            a += static_cast<double>(ra);
            b += static_cast<double>(rb);
        }
        sg[c] = a, sgx[c] = b;
    }
}

template <class Arch, bool Relu, class T>
void input_grad(const T* g, const T* x, const T* r, Ncs d, const double* mean, const double* invstd, const double* weight,
                const double* sum_g, const double* sum_gxhat, T* dx) {
    const double n = static_cast<double>(d.N * d.S);
#pragma omp parallel for num_threads(team_for(d.N * d.C * d.S, d.C)) schedule(static)
    for (std::int64_t c = 0; c < d.C; ++c) {
        // dx = k·(g − Σg/n − (x − mean)·invstd·Σg·x̂/n) = k·g − k·invstd·Σg·x̂/n·x + const
        const double k = weight[c] * invstd[c];
        const double kx = k * invstd[c] * sum_gxhat[c] / n;
        const T a = static_cast<T>(k), b = static_cast<T>(kx), m = static_cast<T>(mean[c]),
                o = static_cast<T>(k * sum_g[c] / n);
        for (std::int64_t i = 0; i < d.N; ++i) {
            const std::int64_t at = (i * d.C + c) * d.S;
#pragma omp simd
            for (std::int64_t j = 0; j < d.S; ++j) dx[at + j] = a * through_relu<Relu>(g[at + j], r, at + j) - b * (x[at + j] - m) - o;
        }
    }
}

}  // namespace tg::simd_bn::kernel

// The tables for one instruction set (ARCH: a tag type naming it), e.g. tg::simd_bn::f32_avx512.
#define TG_BN_TABLE(ARCH, T, NAME)                                                                          \
    const tg::simd_bn::Kernels<T> tg::simd_bn::NAME = {                                                    \
        &tg::simd_bn::kernel::moments<ARCH, T>,                                                            \
        {&tg::simd_bn::kernel::affine<ARCH, false, T>, &tg::simd_bn::kernel::affine<ARCH, true, T>},       \
        {&tg::simd_bn::kernel::sums<ARCH, false, T>, &tg::simd_bn::kernel::sums<ARCH, true, T>},           \
        {&tg::simd_bn::kernel::input_grad<ARCH, false, T>, &tg::simd_bn::kernel::input_grad<ARCH, true, T>}};
#define TG_INSTANTIATE_BN(ARCH, SUFFIX) TG_BN_TABLE(ARCH, float, f32_##SUFFIX) TG_BN_TABLE(ARCH, double, f64_##SUFFIX)
