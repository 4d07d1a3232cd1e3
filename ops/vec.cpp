#include "tapegrad/ops/vec.hpp"

#include <algorithm>
#include <type_traits>

#include "tapegrad/core/transpose.hpp"
#include "tapegrad/ops/vec_kernels.hpp"

namespace tg::vec {

namespace {

// Isa::scalar: plain loops.
template <class T>
void axpy_scalar(std::int64_t n, T a, const T* x, T* y) {
    for (std::int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

template <class T>
void fma_scalar(std::int64_t n, const T* a, const T* b, T* y) {
    for (std::int64_t i = 0; i < n; ++i) y[i] += a[i] * b[i];
}

template <class T>
T dot_scalar(std::int64_t n, const T* x, const T* y) {
    T s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += x[i] * y[i];
    return s;
}

template <class T>
bool all_finite_scalar(const T* p, std::int64_t n) {
    T z = 0;
    for (std::int64_t i = 0; i < n; ++i) z += p[i] * T(0);
    return z == T(0);
}

template <class T>
void interleave2_scalar(std::int64_t n, const T* a, const T* b, T* out, bool add) {
    for (std::int64_t i = 0; i < n; ++i) {
        out[2 * i] = add ? out[2 * i] + a[i] : a[i];
        out[2 * i + 1] = add ? out[2 * i + 1] + b[i] : b[i];
    }
}

template <class T>
void interleave_scalar(std::int64_t n, std::int64_t s, const T* const* src, T* out, bool add) {
    for (std::int64_t q = 0; q < n; ++q)
        for (std::int64_t p = 0; p < s; ++p) out[s * q + p] = add ? out[s * q + p] + src[p][q] : src[p][q];
}

template <class T>
void add_runs_scalar(const Run* runs, std::int64_t n, const T* src, T* dst) {
    for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t e = 0; e < runs[r].len; ++e) dst[runs[r].dst + e] += src[runs[r].src + e];
}

template <class T>
void copy_runs_scalar(const LaneRun* runs, std::int64_t n, const T* src, std::int64_t step, T* dst, std::int64_t count,
                      std::int64_t src_stride, std::int64_t dst_stride) {
    for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < count; ++c) {
            const LaneRun& u = runs[r];
            copy_lanes_scalar(src + u.src + c * src_stride, step, dst + u.dst + c * dst_stride, u.len, u.lo, u.hi);
        }
}

// The transposing copy's own Isa::scalar tiles (tapegrad/core/transpose.hpp), on the bits.
template <class T>
void transpose_scalar(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, T* dst, std::int64_t ldd) {
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    transpose_copy(reinterpret_cast<const Bits*>(src), lds, rows, cols, reinterpret_cast<Bits*>(dst), ldd);
}

// A 64-byte vector's lanes, element by element; Copy: each lane from its one permute.
template <class T, bool Copy = false>
void permute_sum_scalar(const LanePermute* perms, std::int64_t n, const T* src, std::int64_t src_stride, T* dst,
                        std::int64_t dst_stride, std::int64_t len, std::int64_t planes) {
    constexpr std::int64_t R = sizeof(T) / 4, V = 16 / R;
    for (std::int64_t p = 0; p < planes; ++p) {
        std::int64_t k = 0;
        for (std::int64_t a = 0, e0 = 0; e0 < len; ++a, e0 += V) {
            T sum[V] = {};
            for (; k < n && perms[k].acc == a; ++k) {
                const LanePermute& u = perms[k];
                for (std::int64_t l = 0; l < V; ++l) {
                    const std::int64_t j = u.idx[l * R] / R;
                    if (!((u.mask >> (l * R)) & 1u) || j >= u.count) continue;
                    if (Copy) sum[l] = src[p * src_stride + u.src + j];
                    else sum[l] += src[p * src_stride + u.src + j];
                }
            }
            std::copy_n(sum, std::min(V, len - e0), dst + p * dst_stride + e0);
        }
    }
}

template <class T>
constexpr Kernels<T> scalar_table() {
    return {&axpy_scalar<T>,        &fma_scalar<T>,         &dot_scalar<T>,          &all_finite_scalar<T>,
            &interleave2_scalar<T>, &interleave_scalar<T>,  &add_runs_scalar<T>,     &copy_runs_scalar<T>,
            &transpose_scalar<T>,   &permute_sum_scalar<T>, &permute_sum_scalar<T, true>, 64};
}

}  // namespace

const Kernels<float> f32_scalar = scalar_table<float>();
const Kernels<double> f64_scalar = scalar_table<double>();

template <class T>
const Kernels<T>& active_kernels() {
    static const simd::TypedDispatch<Kernels> d{{f32_scalar, f32_avx2, f32_avx512}, {f64_scalar, f64_avx2, f64_avx512}};
    return d.active<T>();
}
template const Kernels<float>& active_kernels<float>();
template const Kernels<double>& active_kernels<double>();

template <class T>
void axpy(std::int64_t n, T a, const T* x, T* y) { active_kernels<T>().axpy(n, a, x, y); }
template <class T>
void fma(std::int64_t n, const T* a, const T* b, T* y) { active_kernels<T>().fma(n, a, b, y); }
template <class T>
T dot(std::int64_t n, const T* x, const T* y) { return active_kernels<T>().dot(n, x, y); }
template <class T>
bool all_finite(const T* p, std::int64_t n) { return active_kernels<T>().all_finite(p, n); }
template <class T>
void interleave2(std::int64_t n, const T* a, const T* b, T* out, bool add) { active_kernels<T>().interleave2(n, a, b, out, add); }
template <class T>
void interleave(std::int64_t n, std::int64_t s, const T* const* src, T* out, bool add) {
    active_kernels<T>().interleave(n, s, src, out, add);
}
template <class T>
void add_runs(const Run* runs, std::int64_t n, const T* src, T* dst) { active_kernels<T>().add_runs(runs, n, src, dst); }
template <class T>
void copy_runs(const LaneRun* runs, std::int64_t n, const T* src, std::int64_t step, T* dst, std::int64_t count,
               std::int64_t src_stride, std::int64_t dst_stride) {
    active_kernels<T>().copy_runs(runs, n, src, step, dst, count, src_stride, dst_stride);
}
template <class T>
void transpose(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, T* dst, std::int64_t ldd) {
    active_kernels<T>().transpose(src, lds, rows, cols, dst, ldd);
}

template <class T>
std::int64_t permute_bytes() { return active_kernels<T>().permute_bytes; }
template <class T>
void permute_sum(const LanePermute* perms, std::int64_t n, const T* src, std::int64_t src_stride, T* dst,
                 std::int64_t dst_stride, std::int64_t len, std::int64_t planes) {
    active_kernels<T>().permute_sum(perms, n, src, src_stride, dst, dst_stride, len, planes);
}

template <class T>
void permute_copy(const LanePermute* perms, std::int64_t n, const T* src, std::int64_t src_stride, T* dst,
                  std::int64_t dst_stride, std::int64_t len, std::int64_t planes) {
    active_kernels<T>().permute_copy(perms, n, src, src_stride, dst, dst_stride, len, planes);
}

#define TG_VEC_PUBLIC(T)                                                                                        \
    template void axpy<T>(std::int64_t, T, const T*, T*);                                                       \
    template void fma<T>(std::int64_t, const T*, const T*, T*);                                                 \
    template T dot<T>(std::int64_t, const T*, const T*);                                                        \
    template bool all_finite<T>(const T*, std::int64_t);                                                        \
    template void interleave2<T>(std::int64_t, const T*, const T*, T*, bool);                                   \
    template void interleave<T>(std::int64_t, std::int64_t, const T* const*, T*, bool);                         \
    template void add_runs<T>(const Run*, std::int64_t, const T*, T*);                                          \
    template void copy_runs<T>(const LaneRun*, std::int64_t, const T*, std::int64_t, T*, std::int64_t, std::int64_t, \
                               std::int64_t);                                                                   \
    template void transpose<T>(const T*, std::int64_t, std::int64_t, std::int64_t, T*, std::int64_t);           \
    template std::int64_t permute_bytes<T>();                                                                   \
    template void permute_sum<T>(const LanePermute*, std::int64_t, const T*, std::int64_t, T*, std::int64_t,    \
                                 std::int64_t, std::int64_t);                                                   \
    template void permute_copy<T>(const LanePermute*, std::int64_t, const T*, std::int64_t, T*, std::int64_t,   \
                                  std::int64_t, std::int64_t);
TG_VEC_PUBLIC(float)
TG_VEC_PUBLIC(double)
#undef TG_VEC_PUBLIC

}  // namespace tg::vec
