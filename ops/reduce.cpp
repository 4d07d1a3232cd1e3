#include "tapegrad/ops/reduce.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tapegrad/core/simd.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/ops/reduce_kernels.hpp"

namespace tg {

namespace {

// The scalar forms of simd_reduce::Kernels (the table simd_reduce::scalar), in the same order
// of additions as the vector ones.
void sum_rows_f32(const float* x, std::int64_t rows, std::int64_t len, double* out) {
    constexpr std::int64_t L = simd_reduce::kLanes;
    const std::int64_t body = len - len % L;
    for (std::int64_t r = 0; r < rows; ++r, x += len) {
        double lane[L] = {};
        for (std::int64_t i = 0; i < body; i += L)
            for (std::int64_t j = 0; j < L; ++j) lane[j] += static_cast<double>(x[i + j]);
        for (std::int64_t w = L / 2; w >= 1; w /= 2)
            for (std::int64_t j = 0; j < w; ++j) lane[j] = lane[j] + lane[j + w];
        double s = lane[0];
        for (std::int64_t i = body; i < len; ++i) s += static_cast<double>(x[i]);
        out[r] = s;
    }
}

template <class T>
void accumulate(const T* x, std::int64_t rows, std::int64_t len, double* acc) {
    for (std::int64_t r = 0; r < rows; ++r, x += len)
        for (std::int64_t j = 0; j < len; ++j) acc[j] += static_cast<double>(x[j]);
}

// The kernels of the active instruction set.
const simd_reduce::Kernels& reduce_kernels() {
    static constexpr simd::Dispatch<simd_reduce::Kernels> d{simd_reduce::scalar, simd_reduce::avx2, simd_reduce::avx512};
    return d.active();
}

}  // namespace

std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op) {
    std::vector<int> out;
    if (axes.empty()) {
        for (int a = 0; a < ndim; ++a) out.push_back(a);
        return out;
    }
    std::vector<bool> seen(static_cast<std::size_t>(ndim), false);
    for (int a : axes) {
        const int b = a < 0 ? a + ndim : a;
        if (b < 0 || b >= ndim) fail("axis", op, ": axis ", a, " out of range for a tensor of rank ", ndim, " (valid: ", -ndim, "..", ndim - 1, ")");
        if (seen[static_cast<std::size_t>(b)]) fail("axis", op, ": axis ", a, " given twice");
        seen[static_cast<std::size_t>(b)] = true;
        out.push_back(b);
    }
    std::sort(out.begin(), out.end());
    return out;
}

Tensor reduce_sum(const Tensor& x, const std::vector<int>& axes_in, bool keepdim) {
    need_float(x, "sum");
    const int nd = x.ndim();
    const std::vector<int> axes = normalize_axes(axes_in, nd, "sum");
    std::vector<bool> red(static_cast<std::size_t>(nd), false);
    for (int a : axes) red[static_cast<std::size_t>(a)] = true;
    Shape kept;  // keepdim shape
    for (int a = 0; a < nd; ++a) kept.push_back(red[static_cast<std::size_t>(a)] ? 1 : x.shape()[static_cast<std::size_t>(a)]);
    // Output strides over the input's index space: 0 on reduced axes.
    const Shape ks = contiguous_strides(kept);
    Shape os(static_cast<std::size_t>(nd));
    for (int a = 0; a < nd; ++a) os[static_cast<std::size_t>(a)] = red[static_cast<std::size_t>(a)] ? 0 : ks[static_cast<std::size_t>(a)];
    std::vector<double> acc(static_cast<std::size_t>(shape_numel(kept)), 0.0);
    const DType ct = compute_dtype(x.dtype());
    const Tensor X = x.to(ct).contiguous();
    // The input as groups of adjacent axes that are all reduced or all kept (size-1 axes
    // dropped), the innermost last.
    struct Group {
        std::int64_t size;
        bool reduced;
    };
    std::vector<Group> groups;
    for (int a = 0; a < nd; ++a) {
        const std::int64_t d = x.shape()[static_cast<std::size_t>(a)];
        const bool r = red[static_cast<std::size_t>(a)];
        if (d == 1) continue;
        if (!groups.empty() && groups.back().reduced == r) groups.back().size *= d;
        else groups.push_back({d, r});
    }
    // Walks the first n groups in C order; `o` is the offset into acc, which moves along the
    // kept groups only.
    struct Odometer {
        const std::vector<Group>& groups;
        std::vector<std::int64_t> idx, ostride;
        std::int64_t o = 0;
        Odometer(const std::vector<Group>& gs, std::size_t n) : groups(gs), idx(n, 0), ostride(n, 0) {
            std::int64_t kept = 1;
            for (std::size_t g = n; g-- > 0;)
                if (!gs[g].reduced) {
                    ostride[g] = kept;
                    kept *= gs[g].size;
                }
        }
        void next() {
            for (std::size_t g = idx.size(); g-- > 0;) {
                o += ostride[g];
                if (++idx[g] < groups[g].size) return;
                o -= ostride[g] * groups[g].size;
                idx[g] = 0;
            }
        }
    };
    const simd_reduce::Kernels& kern = reduce_kernels();
    // The contiguous cases, through the kernels of tapegrad/ops/reduce_kernels.hpp (vectorised unless
    // the instruction set is Isa::scalar):
    // * f32 (and f16/bf16, summed as f32) whose reduced axes are the innermost ones: every
    //   output element sums one contiguous row, in the fixed 32-lane f64 order of
    //   tapegrad/ops/reduce_kernels.hpp (the same for every instruction set, the scalar one included).
    //   This is not the order of the sequential loop below. Both f64 sums are within about
    //   len·2^-53·Σ|x| of the exact sum (the lane-wise one usually closer), far below the
    //   final rounding to the dtype (2^-24 relative for f32): unless cancellation makes Σ|x|
    //   some 2^29/len times the result, the two round to the same value, or to neighbours when
    //   the exact sum lies that close to a rounding boundary. Rows shorter than 32 are summed
    //   sequentially, as by the loop below.
    // * any float type whose innermost axes are kept: x is a sequence of rows of `len`
    //   elements, each added element-wise into a row of acc, in the sequential order: the
    //   result is exactly that of the loop below.
    auto contiguous = [&](auto tag) -> bool {
        using T = decltype(tag);
        const T* px = X.data<T>();
        if (X.numel() == 0 || groups.empty()) return false;
        const std::size_t ng = groups.size();
        if (groups.back().reduced) {
            if constexpr (!std::is_same_v<T, float>) return false;
            else {
                const std::int64_t len = groups.back().size;
                if (ng <= 2) {
                    const std::int64_t rows = ng == 2 ? groups[0].size : 1;
                    kern.sum_rows_f32(px, rows, len, acc.data());
                    return true;
                }
                // Other reduced axes outside (e.g. [N, C, H, W] summed over N, H, W): the
                // sequential order of the generic loop below, exactly, but a contiguous row of
                // `len` at a time (one odometer step per row, not per element): each row is
                // added element by element onto its output's running sum.
                // Up to four consecutive rows with distinct outputs at once: four independent
                // running sums (one add's latency per element shared four ways), each in its
                // own sequential order, so the bits do not change.
                const std::int64_t rows = X.numel() / len;
                std::vector<std::size_t> out(static_cast<std::size_t>(rows));
                Odometer od(groups, ng - 1);
                for (std::int64_t r = 0; r < rows; ++r, od.next()) out[static_cast<std::size_t>(r)] = static_cast<std::size_t>(od.o);
                for (std::int64_t r = 0; r < rows;) {
                    std::size_t o[4];
                    int nb = 0;
                    while (nb < 4 && r + nb < rows && std::find(o, o + nb, out[static_cast<std::size_t>(r + nb)]) == o + nb)
                        o[nb] = out[static_cast<std::size_t>(r + nb)], ++nb;
                    const float* row = px + r * len;
                    if (nb == 4) {
                        double s0 = acc[o[0]], s1 = acc[o[1]], s2 = acc[o[2]], s3 = acc[o[3]];
                        for (std::int64_t i = 0; i < len; ++i) {
                            s0 += static_cast<double>(row[i]);
                            s1 += static_cast<double>(row[len + i]);
                            s2 += static_cast<double>(row[2 * len + i]);
                            s3 += static_cast<double>(row[3 * len + i]);
                        }
                        acc[o[0]] = s0, acc[o[1]] = s1, acc[o[2]] = s2, acc[o[3]] = s3;
                    } else {
                        for (int b = 0; b < nb; ++b) {
                            double sum = acc[o[b]];
                            for (std::int64_t i = 0; i < len; ++i) sum += static_cast<double>(row[b * len + i]);
                            acc[o[b]] = sum;
                        }
                    }
                    r += nb;
                }
                return true;
            }
        }
        const std::int64_t len = groups.back().size;
        const bool has_r = ng >= 2;  // the group before the last is reduced (groups alternate)
        const std::int64_t rows = has_r ? groups[ng - 2].size : 1;
        const std::size_t nouter = has_r ? ng - 2 : ng - 1;
        std::int64_t positions = 1;
        for (std::size_t g = 0; g < nouter; ++g) positions *= groups[g].size;
        void (*acc_rows)(const T*, std::int64_t, std::int64_t, double*);
        if constexpr (std::is_same_v<T, float>) acc_rows = kern.accumulate_f32;
        else acc_rows = kern.accumulate_f64;
        Odometer od(groups, nouter);  // over the outer groups
        for (std::int64_t p = 0; p < positions; ++p, od.next()) acc_rows(px + p * rows * len, rows, len, acc.data() + od.o * len);
        return true;
    };
    with_compute_type(ct, [&](auto tag) {
        using T = decltype(tag);
        if (contiguous(tag)) return;
        const T* px = X.data<T>();
        const std::int64_t n = X.numel();
        const Shape& s = x.shape();
        std::vector<std::int64_t> idx(static_cast<std::size_t>(nd), 0);
        std::int64_t o = 0;
        for (std::int64_t k = 0; k < n; ++k) {
            acc[static_cast<std::size_t>(o)] += static_cast<double>(px[k]);
            for (int a = nd - 1; a >= 0; --a) {
                const std::size_t ua = static_cast<std::size_t>(a);
                o += os[ua];
                if (++idx[ua] < s[ua]) break;
                o -= os[ua] * s[ua];
                idx[ua] = 0;
            }
        }
    });
    Shape out_shape;
    for (int a = 0; a < nd; ++a)
        if (keepdim || !red[static_cast<std::size_t>(a)]) out_shape.push_back(kept[static_cast<std::size_t>(a)]);
    return Tensor::from(out_shape, acc, x.dtype());
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
    if (x.shape() == shape) return x;
    if (broadcast_shapes(shape, x.shape(), "sum_to") != x.shape() || shape.size() > x.shape().size())
        fail("shape", "sum_to: cannot sum ", shape_str(x.shape()), " down to ", shape_str(shape));
    const std::size_t lead = x.shape().size() - shape.size();
    std::vector<int> axes;
    for (std::size_t a = 0; a < x.shape().size(); ++a)
        if (a < lead || (shape[a - lead] == 1 && x.shape()[a] != 1)) axes.push_back(static_cast<int>(a));
    if (axes.empty()) return x.reshape(shape);
    return reduce_sum(x, axes, true).reshape(shape);
}

namespace {

// x viewed as [outer, n, inner] around `axis`; each (outer, inner) line is normalised in
// f64 after subtracting its maximum, its sum taken in line order, each e^z computed once and
// kept for the quotient. Lines along the last axis run one at a time; others in blocks of up
// to kBlock inner positions side by side, position innermost (contiguous reads, where a line
// at a time strode through memory: softmax over the first axis of 2048 × 2048, 207 -> 55 ms).
Tensor softmax_impl(const Tensor& x, int axis, bool log, const char* op) {
    constexpr std::int64_t kBlock = 256;
    need_float(x, op);
    const int nd = x.ndim();
    const int ax = normalize_axes({axis}, nd, op)[0];
    std::int64_t outer = 1, inner = 1;
    const std::int64_t n = x.shape()[static_cast<std::size_t>(ax)];
    for (int a = 0; a < ax; ++a) outer *= x.shape()[static_cast<std::size_t>(a)];
    for (int a = ax + 1; a < nd; ++a) inner *= x.shape()[static_cast<std::size_t>(a)];
    const DType ct = compute_dtype(x.dtype());
    const Tensor X = x.to(ct).contiguous();
    Tensor out = Tensor::empty(x.shape(), ct);
    const std::int64_t bw = std::min(inner, kBlock);
    std::vector<double> m(static_cast<std::size_t>(bw)), s(static_cast<std::size_t>(bw)), e(log ? 0 : static_cast<std::size_t>(n * bw));
    with_compute_type(ct, [&](auto tag) {
        using T = decltype(tag);
        const T* px = X.data<T>();
        T* po = out.data<T>();
        if (inner == 1) {  // contiguous lines: one at a time
            for (std::int64_t o = 0; o < outer; ++o) {
                const T* in = px + o * n;
                T* res = po + o * n;
                double mx = -INFINITY, sum = 0;
                for (std::int64_t j = 0; j < n; ++j) mx = std::max(mx, static_cast<double>(in[j]));
                for (std::int64_t j = 0; j < n; ++j) {
                    const double ez = std::exp(static_cast<double>(in[j]) - mx);
                    if (!log) e[j] = ez;
                    sum += ez;
                }
                if (log) {
                    const double ls = std::log(sum);
                    for (std::int64_t j = 0; j < n; ++j) res[j] = static_cast<T>(static_cast<double>(in[j]) - mx - ls);
                } else {
                    for (std::int64_t j = 0; j < n; ++j) res[j] = static_cast<T>(e[j] / sum);
                }
            }
            return;
        }
        for (std::int64_t o = 0; o < outer; ++o)
            for (std::int64_t i0 = 0; i0 < inner; i0 += bw) {
                const std::int64_t w = std::min(bw, inner - i0);
                const T* in = px + o * n * inner + i0;
                T* res = po + o * n * inner + i0;
                std::fill_n(m.begin(), w, -INFINITY);
                std::fill_n(s.begin(), w, 0.0);
                for (std::int64_t j = 0; j < n; ++j)
                    for (std::int64_t i = 0; i < w; ++i) m[i] = std::max(m[i], static_cast<double>(in[j * inner + i]));
                for (std::int64_t j = 0; j < n; ++j)
                    for (std::int64_t i = 0; i < w; ++i) {
                        const double ez = std::exp(static_cast<double>(in[j * inner + i]) - m[i]);
                        if (!log) e[j * w + i] = ez;
                        s[i] += ez;
                    }
                if (log) {
                    for (std::int64_t i = 0; i < w; ++i) s[i] = std::log(s[i]);
                    for (std::int64_t j = 0; j < n; ++j)
                        for (std::int64_t i = 0; i < w; ++i)
                            res[j * inner + i] = static_cast<T>(static_cast<double>(in[j * inner + i]) - m[i] - s[i]);
                } else {
                    for (std::int64_t j = 0; j < n; ++j)
                        for (std::int64_t i = 0; i < w; ++i) res[j * inner + i] = static_cast<T>(e[j * w + i] / s[i]);
                }
            }
    });
    return out.to(x.dtype());
}

}  // namespace

Tensor softmax(const Tensor& x, int axis) { return softmax_impl(x, axis, false, "softmax"); }
Tensor log_softmax(const Tensor& x, int axis) { return softmax_impl(x, axis, true, "log_softmax"); }

}  // namespace tg

// ---- reductions of the everyday tensor API --------------------------------------------------

namespace tg {

namespace {

// x with the reduced axes moved last and made contiguous in dtype `as`: `outer` rows of
// `inner` elements, one row per result element.
struct Rows {
    Tensor data;
    std::int64_t outer = 1, inner = 1;
    Shape out_shape;
};

Rows rows_of(const Tensor& x, const std::vector<int>& axes_in, bool keepdim, const char* op, DType as) {
    if (!x.defined()) fail("input", op, ": the input is undefined");
    const int nd = x.ndim();
    const std::vector<int> axes = normalize_axes(axes_in, nd, op);
    std::vector<bool> red(static_cast<std::size_t>(nd), false);
    for (int a : axes) red[static_cast<std::size_t>(a)] = true;
    std::vector<int> perm;
    Rows r;
    for (int a = 0; a < nd; ++a)
        if (!red[static_cast<std::size_t>(a)]) perm.push_back(a);
    for (int a : axes) perm.push_back(a);
    for (int a = 0; a < nd; ++a) {
        const std::int64_t d = x.shape()[static_cast<std::size_t>(a)];
        if (red[static_cast<std::size_t>(a)]) r.inner *= d;
        else r.outer *= d;
        if (!red[static_cast<std::size_t>(a)]) r.out_shape.push_back(d);
        else if (keepdim) r.out_shape.push_back(1);
    }
    r.data = x.to(as).permute(perm).contiguous();
    return r;
}

void need_float_reduce(const Tensor& x, const char* op) {
    if (!x.defined()) fail("input", op, ": the input is undefined");
    if (!is_float(x.dtype()))
        fail("dtype", op, ": needs a float tensor, got ", dtype_name(x.dtype()), " ", shape_str(x.shape()), " (convert with .to())");
}

// Per row, f(row, inner) -> double, stored rounded once to `out_dtype`.
template <class F>
Tensor per_row(const Rows& r, DType out_dtype, F&& f) {
    Tensor out = Tensor::empty(r.out_shape, out_dtype);
    with_compute_type<true>(r.data.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* px = r.data.data<T>();
        if (is_float(out_dtype)) {
            const DType ct = compute_dtype(out_dtype);
            Tensor acc = Tensor::empty(r.out_shape, ct);
            with_compute_type(ct, [&](auto otag) {
                using O = decltype(otag);
                O* po = acc.data<O>();
                for (std::int64_t o = 0; o < r.outer; ++o) po[o] = static_cast<O>(f(px + o * r.inner, r.inner));
            });
            out = acc.to(out_dtype);
        } else {
            std::int64_t* po = out.data<std::int64_t>();
            for (std::int64_t o = 0; o < r.outer; ++o) po[o] = static_cast<std::int64_t>(f(px + o * r.inner, r.inner));
        }
    });
    return out;
}

// The index of the row's winner under `better` (strictly better replaces; a NaN beats every
// number and the first NaN stays).
template <class T, class Better>
std::int64_t pick(const T* row, std::int64_t n, Better better) {
    std::int64_t at = 0;
    T best = row[0];
    if constexpr (std::is_floating_point_v<T>) {
        if (best != best) return 0;
        for (std::int64_t i = 1; i < n; ++i) {
            const T v = row[i];
            if (v != v) return i;
            if (better(v, best)) best = v, at = i;
        }
    } else {
        for (std::int64_t i = 1; i < n; ++i)
            if (better(row[i], best)) best = row[i], at = i;
    }
    return at;
}

// The scalar argmax/argmin rows of simd_reduce::scalar.
template <bool Max>
void pick_rows_f32(const float* x, std::int64_t rows, std::int64_t len, std::int64_t* out) {
    for (std::int64_t r = 0; r < rows; ++r, x += len) out[r] = pick(x, len, [](float a, float b) { return Max ? a > b : a < b; });
}

// max/min (largest) and their indices along one axis.
ValuesIndices extreme(const Tensor& x, int axis, bool keepdim, const char* op, bool largest) {
    const auto better = [largest](auto a, auto b) { return largest ? a > b : a < b; };
    if (!x.defined()) fail("input", op, ": the input is undefined");
    const int ax = normalize_axes({axis}, x.ndim(), op)[0];
    if (x.shape()[static_cast<std::size_t>(ax)] == 0)
        fail("axis", op, ": axis ", axis, " of ", shape_str(x.shape()), " is empty (no element to pick)");
    const DType vt = accumulate_dtype(x.dtype());
    const Rows r = rows_of(x, {ax}, keepdim, op, vt);
    ValuesIndices out{Tensor::empty(r.out_shape, vt), Tensor::empty(r.out_shape, DType::i64)};
    std::int64_t* pi = out.indices.data<std::int64_t>();
    with_compute_type<true>(vt, [&](auto tag) {
        using T = decltype(tag);
        const T* px = r.data.data<T>();
        T* pv = out.values.data<T>();
        if constexpr (std::is_same_v<T, float>) {  // f32, f16 and bf16: the vector kernels
            const simd_reduce::Kernels& k = reduce_kernels();
            (largest ? k.argmax_rows_f32 : k.argmin_rows_f32)(px, r.outer, r.inner, pi);
        } else {
            for (std::int64_t o = 0; o < r.outer; ++o) pi[o] = pick(px + o * r.inner, r.inner, better);
        }
        for (std::int64_t o = 0; o < r.outer; ++o) pv[o] = px[o * r.inner + pi[o]];
    });
    out.values = out.values.to(x.dtype());
    return out;
}

}  // namespace

const simd_reduce::Kernels simd_reduce::scalar{sum_rows_f32, accumulate<float>, accumulate<double>, pick_rows_f32<true>,
                                               pick_rows_f32<false>};

Tensor sum(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
    if (!x.defined()) fail("input", "sum: the input is undefined");
    if (is_float(x.dtype())) return reduce_sum(x, axes, keepdim);
    const Rows r = rows_of(x, axes, keepdim, "sum", DType::i64);
    return per_row(r, DType::i64, [](const auto* row, std::int64_t n) {
        std::uint64_t s = 0;  // wraps, as PyTorch's int64 sum
        for (std::int64_t i = 0; i < n; ++i) s += static_cast<std::uint64_t>(row[i]);
        return static_cast<std::int64_t>(s);
    });
}

Tensor mean(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
    need_float_reduce(x, "mean");
    const std::vector<int> ax = normalize_axes(axes, x.ndim(), "mean");
    std::int64_t n = 1;
    for (int a : ax) n *= x.shape()[static_cast<std::size_t>(a)];
    return affine(reduce_sum(x, ax, keepdim), 1.0 / static_cast<double>(n), 0);
}

Tensor prod(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
    if (!x.defined()) fail("input", "prod: the input is undefined");
    if (is_float(x.dtype())) {
        const Rows r = rows_of(x, axes, keepdim, "prod", compute_dtype(x.dtype()));
        return per_row(r, x.dtype(), [](const auto* row, std::int64_t n) {
            double p = 1;
            for (std::int64_t i = 0; i < n; ++i) p *= static_cast<double>(row[i]);
            return p;
        });
    }
    const Rows r = rows_of(x, axes, keepdim, "prod", DType::i64);
    return per_row(r, DType::i64, [](const auto* row, std::int64_t n) {
        std::uint64_t p = 1;
        for (std::int64_t i = 0; i < n; ++i) p *= static_cast<std::uint64_t>(row[i]);
        return static_cast<std::int64_t>(p);
    });
}

Tensor var(const Tensor& x, const std::vector<int>& axes, int correction, bool keepdim) {
    need_float_reduce(x, "var");
    if (correction < 0) fail("correction", "var: correction ", correction, " must be >= 0 (1: unbiased, 0: population)");
    const Rows r = rows_of(x, axes, keepdim, "var", compute_dtype(x.dtype()));
    return per_row(r, x.dtype(), [correction](const auto* row, std::int64_t n) {
        double m = 0;
        for (std::int64_t i = 0; i < n; ++i) m += static_cast<double>(row[i]);
        m /= static_cast<double>(n);
        double s = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const double d = static_cast<double>(row[i]) - m;
            s += d * d;
        }
        return s / static_cast<double>(n - correction);
    });
}

Tensor std(const Tensor& x, const std::vector<int>& axes, int correction, bool keepdim) {
    if (correction < 0) fail("correction", "std: correction ", correction, " must be >= 0 (1: unbiased, 0: population)");
    need_float_reduce(x, "std");
    const Tensor v = var(x.to(compute_dtype(x.dtype())), axes, correction, keepdim);
    with_compute_type(v.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* p = const_cast<Tensor&>(v).data<T>();
        for (std::int64_t i = 0, n = v.numel(); i < n; ++i) p[i] = std::sqrt(p[i]);
    });
    return v.to(x.dtype());
}

Tensor logsumexp(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
    need_float_reduce(x, "logsumexp");
    const Rows r = rows_of(x, axes, keepdim, "logsumexp", compute_dtype(x.dtype()));
    return per_row(r, x.dtype(), [](const auto* row, std::int64_t n) {
        double m = -INFINITY;
        for (std::int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(row[i]));
        for (std::int64_t i = 0; i < n; ++i)
            if (std::isnan(row[i])) return static_cast<double>(row[i]);
        if (std::isinf(m)) return m;
        double s = 0;
        for (std::int64_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(row[i]) - m);
        return m + std::log(s);
    });
}

ValuesIndices max(const Tensor& x, int axis, bool keepdim) { return extreme(x, axis, keepdim, "max", true); }
ValuesIndices min(const Tensor& x, int axis, bool keepdim) { return extreme(x, axis, keepdim, "min", false); }
Tensor argmax(const Tensor& x, int axis, bool keepdim) { return extreme(x, axis, keepdim, "argmax", true).indices; }
Tensor argmin(const Tensor& x, int axis, bool keepdim) { return extreme(x, axis, keepdim, "argmin", false).indices; }

Tensor max(const Tensor& x) {
    if (!x.defined()) fail("input", "max: the input is undefined");
    if (x.numel() == 0) fail("input", "max: the tensor ", shape_str(x.shape()), " is empty");
    return extreme(x.reshape({-1}), 0, false, "max", true).values;
}

Tensor min(const Tensor& x) {
    if (!x.defined()) fail("input", "min: the input is undefined");
    if (x.numel() == 0) fail("input", "min: the tensor ", shape_str(x.shape()), " is empty");
    return extreme(x.reshape({-1}), 0, false, "min", false).values;
}

}  // namespace tg
