#include "tapegrad/autograd/pool.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "tapegrad/autograd/conv.hpp"
#include "tapegrad/core/blas.hpp"
#include "tapegrad/ops/pool.hpp"

namespace tg::ag {

namespace {

void check_pool_geometry(const Shape& xs, const ConvGeometry& g, const char* op) {
    if (g.layout != Layout::NCX || g.Ig != 1 || g.Og != 1)
        fail("geometry", op, ": needs a depthwise NCX geometry (groups = C, one channel per group; see pool_geometry), got G=",
             g.G, " Ig=", g.Ig, " Og=", g.Og);
    if (xs != g.in_shape())
        fail("input", op, ": input ", shape_str(xs), " does not match the geometry's input ", shape_str(g.in_shape()));
}

// For each output position o (flat over [Y...]) and kernel position k (flat over [K...]),
// the flat input position in [X...] the window reads, or −1 in the padding.
std::vector<std::int64_t> window_map(const ConvGeometry& g) {
    const int D = g.D();
    const std::int64_t P = g.out_numel(), KN = g.kernel_numel();
    std::vector<std::int64_t> map(static_cast<std::size_t>(P * KN));
    std::vector<std::int64_t> y(static_cast<std::size_t>(D)), k(static_cast<std::size_t>(D));
    for (std::int64_t o = 0; o < P; ++o) {
        std::int64_t r = o;
        for (int a = D - 1; a >= 0; --a) {
            y[a] = r % g.out_size[a];
            r /= g.out_size[a];
        }
        for (std::int64_t kk = 0; kk < KN; ++kk) {
            std::int64_t rk = kk;
            for (int a = D - 1; a >= 0; --a) {
                k[a] = rk % g.kernel[a];
                rk /= g.kernel[a];
            }
            std::int64_t flat = 0;
            for (int a = 0; a < D && flat >= 0; ++a) {
                const std::int64_t p = y[a] * g.stride[a] + k[a] * g.dilation[a] - g.pad_begin[a];
                flat = p < 0 || p >= g.in_size[a] ? -1 : flat * g.in_size[a] + p;
            }
            map[static_cast<std::size_t>(o * KN + kk)] = flat;
        }
    }
    return map;
}

// A team for `work` element visits of a memory-bound pooling loop.
int pool_team(std::int64_t work) { return team_size(static_cast<double>(work), kTeamMinValues); }

// Position p with value v takes over the window's maximum when nothing was taken yet, or v
// is larger, or v is a NaN over a number (written as selects without branches: a max of
// random data would mispredict half of them).
// (GCC turns `take ? v : best` back into a branch, so the selects are bit masks.)
template <class T>
inline void take_max(T v, std::int64_t p, T& best, std::int64_t& at) {
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    const bool take = (at < 0) | (v > best) | ((v != v) & (best == best));  // bitwise: no short-circuit
    const U m = U(0) - U(take);                                              // all ones when taking
    best = std::bit_cast<T>((std::bit_cast<U>(v) & m) | (std::bit_cast<U>(best) & ~m));
    const std::int64_t mi = -static_cast<std::int64_t>(take);
    at = (p & mi) | (at & ~mi);
}

// Any D, through the window map.
template <class T>
void max_pool_kernel(const T* x, T* y, std::int64_t* idx, std::int64_t planes, std::int64_t Xn, std::int64_t P,
                     std::int64_t KN, const std::vector<std::int64_t>& map) {
#pragma omp parallel for num_threads(pool_team(planes * P * KN)) schedule(static)
    for (std::int64_t pl = 0; pl < planes; ++pl) {
        const T* xp = x + pl * Xn;
        for (std::int64_t o = 0; o < P; ++o) {
            const std::int64_t* w = map.data() + o * KN;
            T best = -std::numeric_limits<T>::infinity();
            std::int64_t at = -1;
            for (std::int64_t k = 0; k < KN; ++k)
                if (w[k] >= 0) take_max(xp[w[k]], w[k], best, at);
            y[pl * P + o] = best;
            idx[pl * P + o] = at;
        }
    }
}

std::pair<Tensor, Tensor> max_pool_forward(const Tensor& x, const ConvGeometry& g) {
    check_pool_geometry(x.shape(), g, "max_pool");
    if (!is_float(x.dtype())) fail("dtype", "max_pool: needs a float input, got ", dtype_name(x.dtype()));
    for (int a = 0; a < g.D(); ++a)
        if (2 * g.pad_begin[a] > g.kernel[a] || 2 * g.pad_end[a] > g.kernel[a])
            fail("padding", "max_pool: padding ", g.pad_begin[a], " on axis ", a, " exceeds half the kernel size ",
                 g.kernel[a], " (some window would hold padding only)");
    const DType ct = compute_dtype(x.dtype());  // the max is exact there
    const Tensor xc = x.to(ct).contiguous();
    const std::int64_t planes = g.N * g.G, Xn = g.in_numel(), P = g.out_numel(), KN = g.kernel_numel();
    Tensor y = Tensor::empty(g.out_shape(), ct), idx = Tensor::empty(g.out_shape(), DType::i64);
    if (g.D() == 2 && Xn < (std::int64_t{1} << 31)) {
        if (ct == DType::f64) max_pool_2d(g, xc.data<double>(), y.data<double>(), idx.data<std::int64_t>());
        else max_pool_2d(g, xc.data<float>(), y.data<float>(), idx.data<std::int64_t>());
    } else {
        const std::vector<std::int64_t> map = window_map(g);
        if (ct == DType::f64)
            max_pool_kernel(xc.data<double>(), y.data<double>(), idx.data<std::int64_t>(), planes, Xn, P, KN, map);
        else
            max_pool_kernel(xc.data<float>(), y.data<float>(), idx.data<std::int64_t>(), planes, Xn, P, KN, map);
    }
    return {y.to(x.dtype()), idx};
}

// out[plane, idx[plane, o]] += v[plane, o] (scatter, out has Xn per plane) or
// out[plane, o] = v[plane, idx[plane, o]] (gather, v has Xn per plane).
template <class T>
void scatter_kernel(const T* v, T* out, const std::int64_t* idx, std::int64_t planes, std::int64_t Xn, std::int64_t P) {
#pragma omp parallel for num_threads(pool_team(planes * P)) schedule(static)
    for (std::int64_t pl = 0; pl < planes; ++pl)
        for (std::int64_t o = 0; o < P; ++o) out[pl * Xn + idx[pl * P + o]] += v[pl * P + o];
}
template <class T>
void gather_kernel(const T* v, T* out, const std::int64_t* idx, std::int64_t planes, std::int64_t Xn, std::int64_t P) {
#pragma omp parallel for num_threads(pool_team(planes * P)) schedule(static)
    for (std::int64_t pl = 0; pl < planes; ++pl)
        for (std::int64_t o = 0; o < P; ++o) out[pl * P + o] = v[pl * Xn + idx[pl * P + o]];
}

Tensor scatter_or_gather(bool scatter, const Tensor& v, const Tensor& idx, const Shape& out_shape, std::int64_t planes,
                         std::int64_t Xn, std::int64_t P) {
    const DType ct = compute_dtype(v.dtype());  // gather is exact there; scatter adds in f32 and rounds once
    const Tensor vc = v.to(ct).contiguous();
    Tensor out = Tensor::zeros(out_shape, ct);
    const std::int64_t* ix = idx.data<std::int64_t>();
    if (ct == DType::f64) {
        if (scatter) scatter_kernel(vc.data<double>(), out.data<double>(), ix, planes, Xn, P);
        else gather_kernel(vc.data<double>(), out.data<double>(), ix, planes, Xn, P);
    } else {
        if (scatter) scatter_kernel(vc.data<float>(), out.data<float>(), ix, planes, Xn, P);
        else gather_kernel(vc.data<float>(), out.data<float>(), ix, planes, Xn, P);
    }
    return out.to(v.dtype());
}

Variable pool_gather(const Variable& v, const Tensor& idx, const Shape& in_shape, const Shape& out_shape,
                     std::int64_t planes, std::int64_t Xn, std::int64_t P);

// The adjoint pair behind max_pool's backward: scatter [N, C, Y...] -> [N, C, X...] and
// gather [N, C, X...] -> [N, C, Y...] at the winners' positions; each is the other's gradient.
Variable pool_scatter(const Variable& g, const Tensor& idx, const Shape& in_shape, const Shape& out_shape,
                      std::int64_t planes, std::int64_t Xn, std::int64_t P) {
    return record("max_pool_scatter", scatter_or_gather(true, g.value(), idx, in_shape, planes, Xn, P), {g}, {},
                  [=](const SavedContext&, const Variable& gg) -> Grads {
                      return {pool_gather(gg, idx, in_shape, out_shape, planes, Xn, P)};
                  });
}

Variable pool_gather(const Variable& v, const Tensor& idx, const Shape& in_shape, const Shape& out_shape,
                     std::int64_t planes, std::int64_t Xn, std::int64_t P) {
    return record("max_pool_gather", scatter_or_gather(false, v.value(), idx, out_shape, planes, Xn, P), {v}, {},
                  [=](const SavedContext&, const Variable& gg) -> Grads {
                      return {pool_scatter(gg, idx, in_shape, out_shape, planes, Xn, P)};
                  });
}

}  // namespace

ConvGeometry pool_geometry(const Shape& xs, const Shape& kernel, const Shape& stride, const Shape& padding,
                           const Shape& dilation, const std::string& op) {
    const std::size_t D = kernel.size();
    if (D == 0) fail("kernel", op, ": kernel must have at least one axis");
    for (std::int64_t k : kernel)
        if (k < 1) fail("kernel", op, ": kernel size ", k, " must be >= 1");
    if (xs.size() != D + 2)
        fail("input", op, ": input ", shape_str(xs), " must be [N, C, ", D, " spatial dims] for a ", D, "-d kernel");
    const Shape s = per_axis(stride, kernel, 1, true, "stride", op);  // the stride defaults to the kernel
    const Shape p = per_axis(padding, Shape(D, 0), 0, true, "padding", op);
    const Shape d = per_axis(dilation, Shape(D, 1), 1, true, "dilation", op);
    const std::int64_t C = xs[1];
    if (C < 1) fail("input", op, ": input ", shape_str(xs), " has no channels");
    return ConvGeometry::forward(ConvParams{.N = xs[0], .C_in = C, .C_out = C, .groups = C,
                                            .in_size = Shape(xs.begin() + 2, xs.end()), .kernel = kernel, .stride = s,
                                            .dilation = d, .pads_begin = p, .pads_end = p, .output_padding = {},
                                            .layout = Layout::NCX},
                                 op);
}

Tensor max_pool_indices(const Tensor& x, const ConvGeometry& g) { return max_pool_forward(x, g).second; }

Variable max_pool(const Variable& x, const ConvGeometry& g) {
    auto [y, idx] = max_pool_forward(x.value(), g);
    const Shape in_shape = g.in_shape(), out_shape = g.out_shape();
    const std::int64_t planes = g.N * g.G, Xn = g.in_numel(), P = g.out_numel();
    return record("max_pool", std::move(y), {x}, {},
                  [=, idx = std::move(idx)](const SavedContext&, const Variable& gy) -> Grads {
                      return {pool_scatter(gy, idx, in_shape, out_shape, planes, Xn, P)};
                  });
}

Variable avg_pool(const Variable& x, const ConvGeometry& g) {
    check_pool_geometry(x.shape(), g, "avg_pool");
    if (!is_float(x.dtype())) fail("dtype", "avg_pool: needs a float input, got ", dtype_name(x.dtype()));
    const Variable w = constant(Tensor::full(g.weight_shape(), 1.0 / static_cast<double>(g.kernel_numel()), x.dtype()));
    return conv(x, w, g);
}

}  // namespace tg::ag
