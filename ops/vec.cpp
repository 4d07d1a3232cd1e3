#include "tapegrad/ops/vec.hpp"

#include "tapegrad/core/simd.hpp"

namespace tg::vec {

// The per-architecture entry points (ops/vec.avx2.cpp, ops/vec.avx512.cpp).
#define TG_VEC_DECLARE(SUFFIX)                                                                \
    template <class T> void axpy_##SUFFIX(std::int64_t n, T a, const T* x, T* y);            \
    template <class T> void fma_##SUFFIX(std::int64_t n, const T* a, const T* b, T* y);      \
    template <class T> T dot_##SUFFIX(std::int64_t n, const T* x, const T* y);              \
    template <class T> void interleave2_##SUFFIX(std::int64_t n, const T* a, const T* b, T* out, bool add);  \
    template <class T> void add_runs_##SUFFIX(const Run* runs, std::int64_t n, const T* src, T* dst);
TG_VEC_DECLARE(avx2)
TG_VEC_DECLARE(avx512)
#undef TG_VEC_DECLARE

template <class T>
void axpy(std::int64_t n, T a, const T* x, T* y) {
    switch (simd::active()) {
        case simd::Isa::avx512: return axpy_avx512(n, a, x, y);
        case simd::Isa::avx2: return axpy_avx2(n, a, x, y);
        case simd::Isa::scalar: break;
    }
    for (std::int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

template <class T>
void fma(std::int64_t n, const T* a, const T* b, T* y) {
    switch (simd::active()) {
        case simd::Isa::avx512: return fma_avx512(n, a, b, y);
        case simd::Isa::avx2: return fma_avx2(n, a, b, y);
        case simd::Isa::scalar: break;
    }
    for (std::int64_t i = 0; i < n; ++i) y[i] += a[i] * b[i];
}

template <class T>
T dot(std::int64_t n, const T* x, const T* y) {
    switch (simd::active()) {
        case simd::Isa::avx512: return dot_avx512(n, x, y);
        case simd::Isa::avx2: return dot_avx2(n, x, y);
        case simd::Isa::scalar: break;
    }
    T s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += x[i] * y[i];
    return s;
}

template <class T>
void interleave2(std::int64_t n, const T* a, const T* b, T* out, bool add) {
    switch (simd::active()) {
        case simd::Isa::avx512: return interleave2_avx512(n, a, b, out, add);
        case simd::Isa::avx2: return interleave2_avx2(n, a, b, out, add);
        case simd::Isa::scalar: break;
    }
    for (std::int64_t i = 0; i < n; ++i) {
        out[2 * i] = add ? out[2 * i] + a[i] : a[i];
        out[2 * i + 1] = add ? out[2 * i + 1] + b[i] : b[i];
    }
}

template <class T>
void add_runs(const Run* runs, std::int64_t n, const T* src, T* dst) {
    switch (simd::active()) {
        case simd::Isa::avx512: return add_runs_avx512(runs, n, src, dst);
        case simd::Isa::avx2: return add_runs_avx2(runs, n, src, dst);
        case simd::Isa::scalar: break;
    }
    for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t e = 0; e < runs[r].len; ++e) dst[runs[r].dst + e] += src[runs[r].src + e];
}

template void interleave2<float>(std::int64_t, const float*, const float*, float*, bool);
template void interleave2<double>(std::int64_t, const double*, const double*, double*, bool);
template void add_runs<float>(const Run*, std::int64_t, const float*, float*);
template void add_runs<double>(const Run*, std::int64_t, const double*, double*);
template void axpy<float>(std::int64_t, float, const float*, float*);
template void axpy<double>(std::int64_t, double, const double*, double*);
template void fma<float>(std::int64_t, const float*, const float*, float*);
template void fma<double>(std::int64_t, const double*, const double*, double*);
template float dot<float>(std::int64_t, const float*, const float*);
template double dot<double>(std::int64_t, const double*, const double*);

}  // namespace tg::vec
