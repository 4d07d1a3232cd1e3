// The xsimd bodies of ops/vec.hpp, templated on the architecture; included only by the
// per-architecture translation units.
#pragma once
#include <cstdint>

#include <xsimd/xsimd.hpp>

#include "tapegrad/ops/vec.hpp"

namespace tg::vec::kernel {

template <class Arch, class T>
void axpy(std::int64_t n, T a, const T* x, T* y) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    const V va(a);
    std::int64_t i = 0;
    for (; i + W <= n; i += W) xsimd::fma(va, V::load_unaligned(x + i), V::load_unaligned(y + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += a * x[i];
}

template <class Arch, class T>
void fma(std::int64_t n, const T* a, const T* b, T* y) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    std::int64_t i = 0;
    for (; i + W <= n; i += W)
        xsimd::fma(V::load_unaligned(a + i), V::load_unaligned(b + i), V::load_unaligned(y + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += a[i] * b[i];
}

template <class Arch, class T>
T dot(std::int64_t n, const T* x, const T* y) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    V acc0(T(0)), acc1(T(0));
    std::int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        acc0 = xsimd::fma(V::load_unaligned(x + i), V::load_unaligned(y + i), acc0);
        acc1 = xsimd::fma(V::load_unaligned(x + i + W), V::load_unaligned(y + i + W), acc1);
    }
    if (i + W <= n) {
        acc0 = xsimd::fma(V::load_unaligned(x + i), V::load_unaligned(y + i), acc0);
        i += W;
    }
    alignas(64) T lanes[W];  // summed in lane order (xsimd's hadd warns for AVX-512 doubles)
    (acc0 + acc1).store_aligned(lanes);
    T s = 0;
    for (std::int64_t l = 0; l < W; ++l) s += lanes[l];
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
}

// xsimd 8.1's zip_lo/zip_hi interleave within 128-bit lanes on AVX2 and AVX-512 (the
// vec test caught it), so this is a plain loop that the compiler vectorises for the
// translation unit's instruction set.
template <class Arch, class T>
void interleave2(std::int64_t n, const T* __restrict a, const T* __restrict b, T* __restrict out, bool add) {
    if (add) {
        for (std::int64_t i = 0; i < n; ++i) {
            out[2 * i] += a[i];
            out[2 * i + 1] += b[i];
        }
        return;
    }
    for (std::int64_t i = 0; i < n; ++i) {
        out[2 * i] = a[i];
        out[2 * i + 1] = b[i];
    }
}

template <class Arch, class T>
void add_runs(const Run* runs, std::int64_t nruns, const T* src, T* dst) {
    using V = xsimd::batch<T, Arch>;
    constexpr std::int64_t W = V::size;
    for (std::int64_t r = 0; r < nruns; ++r) {
        const T* s = src + runs[r].src;
        T* d = dst + runs[r].dst;
        const std::int64_t n = runs[r].len;
        std::int64_t i = 0;
        for (; i + W <= n; i += W) (V::load_unaligned(d + i) + V::load_unaligned(s + i)).store_unaligned(d + i);
#ifdef __AVX512F__
        // AVX-512: the tail in one masked vector (col2im's runs are often shorter than a
        // vector: dcgan_g2's are 7-8 floats). Masked-off lanes are neither read nor written.
        // Not for runs under 3/8 of a vector: there the next run's loads, overlapping this
        // run's masked store, wait for it and a few scalar adds are cheaper (measured: tiny,
        // runs of 4-5 floats, 1.27x slower with it; dcgan_g3/g4, grouped_g8 and vol3d, runs
        // of 7-8 floats, 3-10% faster).
        if constexpr (W * sizeof(T) == 64) {
            if (i < n && 8 * n >= 3 * W) {
                if constexpr (sizeof(T) == 4) {
                    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
                    const __m512 sum = _mm512_add_ps(_mm512_maskz_loadu_ps(m, d + i), _mm512_maskz_loadu_ps(m, s + i));
                    _mm512_mask_storeu_ps(d + i, m, sum);
                } else {
                    const __mmask8 m = static_cast<__mmask8>((1u << (n - i)) - 1);
                    const __m512d sum = _mm512_add_pd(_mm512_maskz_loadu_pd(m, d + i), _mm512_maskz_loadu_pd(m, s + i));
                    _mm512_mask_storeu_pd(d + i, m, sum);
                }
                continue;
            }
        }
#endif
        for (; i < n; ++i) d[i] += s[i];
    }
}

}  // namespace tg::vec::kernel

// The per-architecture entry points, named e.g. tg::vec::axpy_avx512.
#define TG_VEC_INSTANTIATE(ARCH, SUFFIX)                                                                      \
    namespace tg::vec {                                                                                       \
    template <class T> void axpy_##SUFFIX(std::int64_t n, T a, const T* x, T* y) {                             \
        kernel::axpy<ARCH, T>(n, a, x, y);                                                                    \
    }                                                                                                         \
    template <class T> void fma_##SUFFIX(std::int64_t n, const T* a, const T* b, T* y) {                      \
        kernel::fma<ARCH, T>(n, a, b, y);                                                                     \
    }                                                                                                         \
    template <class T> T dot_##SUFFIX(std::int64_t n, const T* x, const T* y) { return kernel::dot<ARCH, T>(n, x, y); } \
    template <class T> void interleave2_##SUFFIX(std::int64_t n, const T* a, const T* b, T* out, bool add) {  \
        kernel::interleave2<ARCH, T>(n, a, b, out, add);                                                      \
    }                                                                                                         \
    template void interleave2_##SUFFIX<float>(std::int64_t, const float*, const float*, float*, bool);       \
    template void interleave2_##SUFFIX<double>(std::int64_t, const double*, const double*, double*, bool);   \
    template <class T> void add_runs_##SUFFIX(const Run* runs, std::int64_t n, const T* src, T* dst) {        \
        kernel::add_runs<ARCH, T>(runs, n, src, dst);                                                         \
    }                                                                                                         \
    template void add_runs_##SUFFIX<float>(const Run*, std::int64_t, const float*, float*);                  \
    template void add_runs_##SUFFIX<double>(const Run*, std::int64_t, const double*, double*);               \
    template void axpy_##SUFFIX<float>(std::int64_t, float, const float*, float*);                           \
    template void axpy_##SUFFIX<double>(std::int64_t, double, const double*, double*);                       \
    template void fma_##SUFFIX<float>(std::int64_t, const float*, const float*, float*);                     \
    template void fma_##SUFFIX<double>(std::int64_t, const double*, const double*, double*);                 \
    template float dot_##SUFFIX<float>(std::int64_t, const float*, const float*);                            \
    template double dot_##SUFFIX<double>(std::int64_t, const double*, const double*);                        \
    }
