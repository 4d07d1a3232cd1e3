#include "tapegrad/ops/elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tapegrad/core/simd.hpp"
#include "tapegrad/ops/elementwise_kernels.hpp"

namespace tg {

namespace simd_ew {
namespace {
template <class T>
std::int64_t binary_none(Bin, const T*, const T*, T*, std::int64_t) { return 0; }
template <class T>
std::int64_t binary_scalar_none(Bin, const T*, T, T*, std::int64_t) { return 0; }
template <class T>
std::int64_t affine_none(const T*, T, T, T*, std::int64_t) { return 0; }
template <class T>
std::int64_t adam_none(T*, const T*, T*, T*, std::int64_t, const AdamStep<T>&) { return 0; }
}  // namespace
const Kernels<float> f32_scalar = {&binary_none<float>, &binary_scalar_none<float>, &affine_none<float>, &adam_none<float>};
const Kernels<double> f64_scalar = {&binary_none<double>, &binary_scalar_none<double>, &affine_none<double>,
                                    &adam_none<double>};
const simd::TypedDispatch<Kernels>& dispatch() {
    static const simd::TypedDispatch<Kernels> d{{f32_scalar, f32_avx2, f32_avx512}, {f64_scalar, f64_avx2, f64_avx512}};
    return d;
}
}  // namespace simd_ew

void need_float(const Tensor& t, const char* op, const char* which) {
    if (!t.defined()) fail("input", op, ": ", which, " is undefined");
    if (!is_float(t.dtype()))
        fail("dtype", op, ": needs a float tensor, got ", dtype_name(t.dtype()), " ", shape_str(t.shape()), " as ", which);
}

namespace {

template <class T>
T apply_binary(BinaryOp op, T a, T b) {
    switch (op) {
        case BinaryOp::Add: return a + b;
        case BinaryOp::Sub: return a - b;
        case BinaryOp::Mul: return a * b;
        case BinaryOp::Div: return a / b;
        case BinaryOp::ReluGrad: return b <= T(0) ? a * T(0) : a;
    }
    return T(0);
}

simd_ew::Bin vector_op(BinaryOp op) {
    switch (op) {
        case BinaryOp::Add: return simd_ew::Bin::add;
        case BinaryOp::Sub: return simd_ew::Bin::sub;
        case BinaryOp::Mul: return simd_ew::Bin::mul;
        case BinaryOp::Div: return simd_ew::Bin::div;
        case BinaryOp::ReluGrad: return simd_ew::Bin::relu_grad;
    }
    return simd_ew::Bin::add;
}

const char* binary_name(BinaryOp op) {
    switch (op) {
        case BinaryOp::Add: return "add";
        case BinaryOp::Sub: return "sub";
        case BinaryOp::Mul: return "mul";
        case BinaryOp::Div: return "div";
        case BinaryOp::ReluGrad: return "relu_grad";
    }
    return "?";
}

}  // namespace

Shape broadcast_strides(const Shape& s, const Shape& out) {
    Shape st(out.size(), 0);
    const Shape cs = contiguous_strides(s);
    const std::size_t off = out.size() - s.size();
    for (std::size_t i = 0; i < s.size(); ++i) st[off + i] = s[i] == 1 ? 0 : cs[i];
    return st;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& op) {
    const std::size_t n = std::max(a.size(), b.size());
    Shape out(n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
        const std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
        if (da != db && da != 1 && db != 1)
            fail("shape", op, ": shapes ", shape_str(a), " and ", shape_str(b), " do not broadcast (axis ", i,
                 " of the result: ", da, " vs ", db, ")");
        out[i] = da == 1 ? db : da;
    }
    return out;
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
    const char* name = binary_name(op);
    need_float(a, name, "operand a");
    need_float(b, name, "operand b");
    if (a.dtype() != b.dtype())
        fail("dtype", name, ": operand dtypes differ (", dtype_name(a.dtype()), " ", shape_str(a.shape()), " and ",
             dtype_name(b.dtype()), " ", shape_str(b.shape()), ")");
    const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), name);
    const DType ct = compute_dtype(a.dtype());
    const Tensor A = a.to(ct).contiguous(), B = b.to(ct).contiguous();
    Tensor out = Tensor::empty(out_shape, ct);
    with_compute_type(ct, [&](auto tag) {
        using T = decltype(tag);
        const T* pa = A.data<T>();
        const T* pb = B.data<T>();
        T* po = out.data<T>();
        const std::int64_t n = out.numel();
        // The vector kernels of the active set cover the contiguous runs (each lane bit for bit
        // the scalar expression): whole vectors, then the tail.
        const simd_ew::Kernels<T>& vk = simd_ew::dispatch().active<T>();
        if (a.shape() == b.shape()) {
            std::int64_t k = vk.binary(vector_op(op), pa, pb, po, n);
            for (; k < n; ++k) po[k] = apply_binary(op, pa[k], pb[k]);
        } else if (B.numel() == 1) {
            const T s = pb[0];
            std::int64_t k = vk.binary_scalar(vector_op(op), pa, s, po, n);
            for (; k < n; ++k) po[k] = apply_binary(op, pa[k], s);  // the result has a's element count
        } else {
            // Broadcasting: the innermost axes along which each operand is either constant
            // (stride 0) or contiguous form a run of `inner` elements computed by one row
            // loop (vectorised when an operand is constant or both are contiguous); the outer
            // axes are walked as before. A channel bias [1, C, 1, 1] on [N, C, H, W] runs
            // H·W at a time. Every element is the same expression as in the element loop.
            const Shape sa = broadcast_strides(a.shape(), out_shape), sb = broadcast_strides(b.shape(), out_shape);
            const Shape cs = contiguous_strides(out_shape);
            int t = static_cast<int>(out_shape.size());
            int ca = -1, cb = -1;  // per operand along the run: -1 undecided, 0 constant, 1 contiguous
            auto fits = [&](int& c, std::int64_t st, std::int64_t want) {
                const int k = st == 0 ? 0 : st == want ? 1 : 2;
                if (k == 2 || (c >= 0 && c != k)) return false;
                c = k;
                return true;
            };
            while (t > 0) {
                const std::size_t ax = static_cast<std::size_t>(t - 1);
                if (out_shape[ax] != 1) {
                    int na = ca, nb = cb;
                    if (!fits(na, sa[ax], cs[ax]) || !fits(nb, sb[ax], cs[ax])) break;
                    ca = na, cb = nb;
                }
                --t;
            }
            std::int64_t inner = 1;
            for (std::size_t ax = static_cast<std::size_t>(t); ax < out_shape.size(); ++ax) inner *= out_shape[ax];
            const Shape outer(out_shape.begin(), out_shape.begin() + t), oa(sa.begin(), sa.begin() + t),
                ob(sb.begin(), sb.begin() + t);
            const bool commutes = op == BinaryOp::Add || op == BinaryOp::Mul;
            for_each_broadcast(outer, oa, ob, [&](std::int64_t r, std::int64_t ia, std::int64_t ib) {
                const T* ra = pa + ia;
                const T* rb = pb + ib;
                T* ro = po + r * inner;
                std::int64_t k = 0;
                if (ca != 0 && cb != 0) {  // both contiguous
                    k = vk.binary(vector_op(op), ra, rb, ro, inner);
                    for (; k < inner; ++k) ro[k] = apply_binary(op, ra[k], rb[k]);
                } else if (ca != 0) {  // b constant
                    k = vk.binary_scalar(vector_op(op), ra, rb[0], ro, inner);
                    for (; k < inner; ++k) ro[k] = apply_binary(op, ra[k], rb[0]);
                } else if (cb != 0) {  // a constant
                    k = commutes ? vk.binary_scalar(vector_op(op), rb, ra[0], ro, inner) : 0;
                    for (; k < inner; ++k) ro[k] = apply_binary(op, ra[0], rb[k]);
                } else {
                    const T v = apply_binary(op, ra[0], rb[0]);
                    for (; k < inner; ++k) ro[k] = v;
                }
            });
        }
    });
    return out.to(a.dtype());
}

Tensor affine(const Tensor& x, double scale, double shift) {
    need_float(x, "affine");
    const DType ct = compute_dtype(x.dtype());
    const Tensor X = x.to(ct).contiguous();
    Tensor out = Tensor::empty(x.shape(), ct);
    with_compute_type(ct, [&](auto tag) {
        using T = decltype(tag);
        const T* px = X.data<T>();
        T* po = out.data<T>();
        const T s = static_cast<T>(scale), b = static_cast<T>(shift);
        const std::int64_t n = out.numel();
        std::int64_t k = simd_ew::dispatch().active<T>().affine(px, s, b, po, n);  // whole vectors, then the tail
        for (; k < n; ++k) po[k] = px[k] * s + b;  // this unit has no -mfma: the product is rounded, as in the kernels
    });
    return out.to(x.dtype());
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
    if (!x.defined()) fail("input", "broadcast_to: input is undefined");
    if (broadcast_shapes(x.shape(), shape, "broadcast_to") != shape || x.ndim() > static_cast<int>(shape.size()))
        fail("shape", "broadcast_to: cannot broadcast ", shape_str(x.shape()), " to ", shape_str(shape));
    if (x.shape() == shape) return x.clone();
    const Tensor X = x.contiguous();
    Tensor out = Tensor::empty(shape, x.dtype());
    const Shape zero(shape.size(), 0);
    with_element_bytes(dtype_size(x.dtype()), [&](auto e) {
        using E = decltype(e);
        const E* px = static_cast<const E*>(X.raw_data());
        E* po = static_cast<E*>(out.raw_data());
        for_each_broadcast(shape, broadcast_strides(x.shape(), shape), zero,
                           [&](std::int64_t k, std::int64_t ia, std::int64_t) { po[k] = px[ia]; });
    });
    return out;
}

}  // namespace tg
