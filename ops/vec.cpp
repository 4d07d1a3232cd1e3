#include "tapegrad/ops/vec.hpp"

#include "tapegrad/core/simd.hpp"

namespace tg::vec {

// The per-architecture entry points (ops/vec.avx2.cpp, ops/vec.avx512.cpp).
#define TG_VEC_DECLARE(SUFFIX)                                                                \
    template <class T> void axpy_##SUFFIX(std::int64_t n, T a, const T* x, T* y);            \
    template <class T> void fma_##SUFFIX(std::int64_t n, const T* a, const T* b, T* y);      \
    template <class T> T dot_##SUFFIX(std::int64_t n, const T* x, const T* y);              \
    template <class T> void interleave2_##SUFFIX(std::int64_t n, const T* a, const T* b, T* out, bool add);  \
    template <class T> void add_runs_##SUFFIX(const Run* runs, std::int64_t n, const T* src, T* dst);  \
    template <class T> void copy_runs_##SUFFIX(const LaneRun* runs, std::int64_t n, const T* src, std::int64_t step, T* dst,  \
                                               std::int64_t count, std::int64_t ss, std::int64_t ds);  \
    template <class T> void transpose_##SUFFIX(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, \
                                               T* dst, std::int64_t ldd);
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

template <class T>
void copy_runs(const LaneRun* runs, std::int64_t n, const T* src, std::int64_t step, T* dst, std::int64_t count,
               std::int64_t src_stride, std::int64_t dst_stride) {
    switch (simd::active()) {
        case simd::Isa::avx512: return copy_runs_avx512(runs, n, src, step, dst, count, src_stride, dst_stride);
        case simd::Isa::avx2: return copy_runs_avx2(runs, n, src, step, dst, count, src_stride, dst_stride);
        case simd::Isa::scalar: break;
    }
    for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < count; ++c) {
            const LaneRun& u = runs[r];
            T* d = dst + u.dst + c * dst_stride;
            for (std::int64_t e = 0; e < u.len; ++e)
                d[e] = e >= u.lo && e < u.hi ? src[u.src + c * src_stride + (e - u.lo) * step] : T(0);
        }
}

template <class T>
void transpose(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, T* dst, std::int64_t ldd) {
    switch (simd::active()) {
        case simd::Isa::avx512: return transpose_avx512(src, lds, rows, cols, dst, ldd);
        case simd::Isa::avx2: return transpose_avx2(src, lds, rows, cols, dst, ldd);
        case simd::Isa::scalar: break;
    }
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) dst[c * ldd + r] = src[r * lds + c];
}

template void transpose<float>(const float*, std::int64_t, std::int64_t, std::int64_t, float*, std::int64_t);
template void transpose<double>(const double*, std::int64_t, std::int64_t, std::int64_t, double*, std::int64_t);
template void copy_runs<float>(const LaneRun*, std::int64_t, const float*, std::int64_t, float*, std::int64_t, std::int64_t,
                              std::int64_t);
template void copy_runs<double>(const LaneRun*, std::int64_t, const double*, std::int64_t, double*, std::int64_t, std::int64_t,
                               std::int64_t);
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
