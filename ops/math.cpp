#include "tapegrad/ops/math.hpp"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/ops/functors.hpp"

namespace tg {

namespace {

// 0 bool, 1 int, 2 float: the promotion order of the kinds.
int kind(DType t) { return t == DType::b8 ? 0 : is_int(t) ? 1 : 2; }

void need(const Tensor& t, const char* fn, const char* which) {
    if (!t.defined()) fail("input", fn, ": ", which, " is undefined");
}

// The dtype a kernel computes `d` in: floats as compute_dtype, ints and bool as themselves.
DType compute_of(DType d) { return is_float(d) ? compute_dtype(d) : d; }

// f(a[i], b[i]) broadcast, both operands converted to `in` (a compute dtype or f16/bf16,
// computed in f32). A bool-valued f gives a b8 tensor, any other the dtype `in`.
template <class F>
Tensor broadcast_map(const char* fn, const Tensor& a, const Tensor& b, DType in, F f) {
    const Shape shape = broadcast_shapes(a.shape(), b.shape(), fn);
    const DType ct = compute_of(in);
    const Tensor A = a.to(ct).contiguous(), B = b.to(ct).contiguous();
    const Shape sa = broadcast_strides(A.shape(), shape), sb = broadcast_strides(B.shape(), shape);
    return with_compute_type<true>(ct, [&](auto tag) -> Tensor {
        using T = decltype(tag);
        const T* pa = A.data<T>();
        const T* pb = B.data<T>();
        if constexpr (std::is_same_v<decltype(f(T{}, T{})), bool>) {
            Tensor out = Tensor::empty(shape, DType::b8);
            std::uint8_t* po = out.data<std::uint8_t>();
            for_each_broadcast(shape, sa, sb, [&](std::int64_t k, std::int64_t ia, std::int64_t ib) { po[k] = f(pa[ia], pb[ib]) ? 1 : 0; });
            return out;
        } else {
            Tensor out = Tensor::empty(shape, ct);
            T* po = out.data<T>();
            for_each_broadcast(shape, sa, sb, [&](std::int64_t k, std::int64_t ia, std::int64_t ib) { po[k] = f(pa[ia], pb[ib]); });
            return out.to(in);
        }
    });
}

// f(x) of every element, computed in compute_of(out) and stored as `out`.
template <class F>
Tensor unary_map(const Tensor& x, DType out, const F& f) {
    const DType ct = compute_of(out);
    const Tensor X = x.to(ct).contiguous();
    Tensor y = Tensor::empty(x.shape(), ct);
    with_compute_type<true>(ct, [&](auto tag) {
        using T = decltype(tag);
        vector_map(f, X.data<T>(), y.data<T>(), y.numel());
    });
    return y.to(out);
}

// A float function: int and bool inputs give f32.
template <class F>
Tensor unary_float(const char* fn, const Tensor& t, const F& f) {
    need(t, fn, "input");
    return unary_map(t, is_float(t.dtype()) ? t.dtype() : DType::f32, f);
}

// An op that keeps int dtypes (neg, abs, relu, sign); bool has no meaning for it.
template <class F>
Tensor unary_signed(const char* fn, const Tensor& t, const F& f) {
    need(t, fn, "input");
    if (t.dtype() == DType::b8) fail("dtype", fn, ": not defined for a bool tensor ", shape_str(t.shape()), " (convert it with .to())");
    return unary_map(t, t.dtype(), f);
}

DType arith_dtype(const char* fn, DType a, DType b, bool true_div) {
    DType rt = result_dtype(a, b);
    if (rt == DType::b8)
        fail("dtype", fn, ": arithmetic on two bool tensors is not defined (convert one with .to(DType::i32))");
    if (true_div && !is_float(rt)) rt = DType::f32;
    return rt;
}

template <class F>
Tensor arith(BinaryOp op, const char* fn, const Tensor& a, const Tensor& b, F f) {
    need(a, fn, "a");
    need(b, fn, "b");
    const DType rt = arith_dtype(fn, a.dtype(), b.dtype(), op == BinaryOp::Div);
    if (is_float(rt)) return binary_op(op, a.to(rt), b.to(rt));  // the vectorised, broadcast-by-runs kernel
    return broadcast_map(fn, a, b, rt, f);
}

// t op s (or s op t when scalar_left).
template <class F>
Tensor arith_scalar(BinaryOp op, const char* fn, const Tensor& t, double s, bool scalar_left, F f) {
    need(t, fn, scalar_left ? "b" : "a");
    DType rt = result_dtype(t.dtype(), s);
    if (op == BinaryOp::Div && !is_float(rt)) rt = DType::f32;
    const DType ct = compute_of(rt);
    const Tensor S = Tensor::full({}, s, ct);
    if (is_float(rt)) {
        const Tensor T = t.to(ct);
        return (scalar_left ? binary_op(op, S, T) : binary_op(op, T, S)).to(rt);
    }
    return scalar_left ? broadcast_map(fn, S, t, rt, f) : broadcast_map(fn, t, S, rt, f);
}

template <class F>
Tensor compare(const char* fn, const Tensor& a, const Tensor& b, F f) {
    need(a, fn, "a");
    need(b, fn, "b");
    return broadcast_map(fn, a, b, result_dtype(a.dtype(), b.dtype()), f);
}

template <class F>
Tensor compare_scalar(const char* fn, const Tensor& a, double s, F f) {
    need(a, fn, "a");
    const DType rt = result_dtype(a.dtype(), s);
    return broadcast_map(fn, a, Tensor::full({}, s, compute_of(rt)), rt, f);
}

// Writes r (already a's shape) into a, which may be a strided view, and bumps its version.
Tensor& write_into(Tensor& a, const Tensor& result) {
    const Tensor r = result.to(a.dtype()).contiguous();
    const std::int64_t es = static_cast<std::int64_t>(dtype_size(a.dtype()));
    std::byte* pa = static_cast<std::byte*>(a.raw_data());
    const std::byte* pr = static_cast<const std::byte*>(r.raw_data());
    if (a.is_contiguous()) {
        if (pa != pr) std::memmove(pa, pr, static_cast<std::size_t>(a.numel() * es));
    } else {
        const Shape zero(a.shape().size(), 0);
        with_element_bytes(static_cast<std::size_t>(es), [&](auto e) {
            using E = decltype(e);
            E* ta = reinterpret_cast<E*>(pa);
            const E* tr = reinterpret_cast<const E*>(pr);
            for_each_broadcast(a.shape(), a.strides(), zero, [&](std::int64_t k, std::int64_t ia, std::int64_t) { ta[ia] = tr[k]; });
        });
    }
    a.bump_version();
    return a;
}

void check_compound(const char* fn, const Tensor& a, const Shape& bshape, DType rt) {
    if (kind(rt) > kind(a.dtype()))
        fail("dtype", fn, ": the result is ", dtype_name(rt), ", which the left operand (", dtype_name(a.dtype()), " ",
             shape_str(a.shape()), ") cannot hold");
    if (broadcast_shapes(a.shape(), bshape, fn) != a.shape())
        fail("shape", fn, ": the result has shape ", shape_str(broadcast_shapes(a.shape(), bshape, fn)),
             ", the left operand ", shape_str(a.shape()), " (it must already have the result's shape)");
}

template <class Op>
Tensor& compound(const char* fn, Tensor& a, const Tensor& b, bool true_div, Op op) {
    need(a, fn, "a");
    need(b, fn, "b");
    check_compound(fn, a, b.shape(), arith_dtype(fn, a.dtype(), b.dtype(), true_div));
    return write_into(a, op(a, b));
}

template <class Op>
Tensor& compound_scalar(const char* fn, Tensor& a, double s, bool true_div, Op op) {
    need(a, fn, "a");
    DType rt = result_dtype(a.dtype(), s);
    if (true_div && !is_float(rt)) rt = DType::f32;
    check_compound(fn, a, {}, rt);
    return write_into(a, op(a, s));
}

void need_mask(const Tensor& m, const char* fn) {
    need(m, fn, "mask");
    if (m.dtype() != DType::b8)
        fail("mask", fn, ": mask must be a bool (b8) tensor, got ", dtype_name(m.dtype()), " ", shape_str(m.shape()));
}

}  // namespace

DType result_dtype(DType a, DType b) {
    if (a == b) return a;
    const int ka = kind(a), kb = kind(b);
    if (ka != kb) return ka > kb ? a : b;
    if (ka == 1) return DType::i64;  // i32 with i64
    if (a == DType::f64 || b == DType::f64) return DType::f64;
    return DType::f32;  // f32 with a 16-bit float, or f16 with bf16
}

DType result_dtype(DType a, double scalar) {
    if (is_float(a)) return a;
    if (!std::isfinite(scalar) || scalar != std::trunc(scalar)) return DType::f32;
    return a == DType::b8 ? DType::i64 : a;
}

// ---- arithmetic -------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) { return arith(BinaryOp::Add, "add", a, b, fn::Add{}); }
Tensor sub(const Tensor& a, const Tensor& b) { return arith(BinaryOp::Sub, "sub", a, b, fn::Sub{}); }
Tensor mul(const Tensor& a, const Tensor& b) { return arith(BinaryOp::Mul, "mul", a, b, fn::Mul{}); }
Tensor relu_grad(const Tensor& grad, const Tensor& x) {
    need_float(grad, "relu_grad", "grad");
    need_float(x, "relu_grad", "x");
    const DType rt = result_dtype(grad.dtype(), x.dtype());
    return binary_op(BinaryOp::ReluGrad, grad.to(rt), x.to(rt));
}
Tensor div(const Tensor& a, const Tensor& b) { return arith(BinaryOp::Div, "div", a, b, fn::Add{}); }  // always float
Tensor add(const Tensor& a, double b) { return arith_scalar(BinaryOp::Add, "add", a, b, false, fn::Add{}); }
Tensor sub(const Tensor& a, double b) { return arith_scalar(BinaryOp::Sub, "sub", a, b, false, fn::Sub{}); }
Tensor sub(double a, const Tensor& b) { return arith_scalar(BinaryOp::Sub, "sub", b, a, true, fn::Sub{}); }
Tensor mul(const Tensor& a, double b) { return arith_scalar(BinaryOp::Mul, "mul", a, b, false, fn::Mul{}); }
Tensor div(const Tensor& a, double b) { return arith_scalar(BinaryOp::Div, "div", a, b, false, fn::Add{}); }
Tensor div(double a, const Tensor& b) { return arith_scalar(BinaryOp::Div, "div", b, a, true, fn::Add{}); }

Tensor& operator+=(Tensor& a, const Tensor& b) { return compound("operator+=", a, b, false, [](const Tensor& x, const Tensor& y) { return add(x, y); }); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return compound("operator-=", a, b, false, [](const Tensor& x, const Tensor& y) { return sub(x, y); }); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return compound("operator*=", a, b, false, [](const Tensor& x, const Tensor& y) { return mul(x, y); }); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return compound("operator/=", a, b, true, [](const Tensor& x, const Tensor& y) { return div(x, y); }); }
Tensor& operator+=(Tensor& a, double b) { return compound_scalar("operator+=", a, b, false, [](const Tensor& x, double y) { return add(x, y); }); }
Tensor& operator-=(Tensor& a, double b) { return compound_scalar("operator-=", a, b, false, [](const Tensor& x, double y) { return sub(x, y); }); }
Tensor& operator*=(Tensor& a, double b) { return compound_scalar("operator*=", a, b, false, [](const Tensor& x, double y) { return mul(x, y); }); }
Tensor& operator/=(Tensor& a, double b) { return compound_scalar("operator/=", a, b, true, [](const Tensor& x, double y) { return div(x, y); }); }

// ---- element-wise functions ---------------------------------------------------------------

Tensor neg(const Tensor& t) { return unary_signed("neg", t, fn::Neg{}); }
Tensor abs(const Tensor& t) { return unary_signed("abs", t, fn::Abs{}); }
Tensor sign(const Tensor& t) { return unary_signed("sign", t, fn::Sign{}); }
Tensor relu(const Tensor& t) { return unary_signed("relu", t, fn::Relu{}); }
Tensor exp(const Tensor& t) { return unary_float("exp", t, fn::Exp{}); }
Tensor softplus(const Tensor& t) { return unary_float("softplus", t, fn::Softplus{}); }
Tensor leaky_relu(const Tensor& t, double slope) {
    need_float(t, "leaky_relu");
    return unary_map(t, t.dtype(), fn::LeakyRelu<double>{slope});
}
Tensor step(const Tensor& t, double below, double at_nan) {
    need_float(t, "step");
    return unary_map(t, t.dtype(), fn::Step<double>{below, at_nan});
}
Tensor log(const Tensor& t) { return unary_float("log", t, fn::Log{}); }
Tensor sqrt(const Tensor& t) { return unary_float("sqrt", t, fn::Sqrt{}); }
Tensor rsqrt(const Tensor& t) { return unary_float("rsqrt", t, fn::Rsqrt{}); }
Tensor sin(const Tensor& t) { return unary_float("sin", t, fn::Sin{}); }
Tensor cos(const Tensor& t) { return unary_float("cos", t, fn::Cos{}); }
Tensor tanh(const Tensor& t) { return unary_float("tanh", t, fn::Tanh{}); }
Tensor sigmoid(const Tensor& t) { return unary_float("sigmoid", t, fn::Sigmoid{}); }

Tensor pow(const Tensor& t, double p) {
    need(t, "pow", "input");
    const DType rt = result_dtype(t.dtype(), p);
    if (!is_float(rt)) return broadcast_map("pow", t, Tensor::full({}, p, rt), rt, fn::Pow{});
    if (p == 2.0) return unary_map(t, rt, fn::Square{});  // x·x, vectorised (libm's pow: 40× the time)
    return unary_map(t, rt, fn::PowScalar<double>{p});
}

Tensor pow(const Tensor& a, const Tensor& b) {
    need(a, "pow", "a");
    need(b, "pow", "b");
    return broadcast_map("pow", a, b, arith_dtype("pow", a.dtype(), b.dtype(), false), fn::Pow{});
}

Tensor clamp(const Tensor& t, double lo, double hi) {
    need(t, "clamp", "input");
    if (t.dtype() == DType::b8) fail("dtype", "clamp: not defined for a bool tensor ", shape_str(t.shape()));
    return unary_map(t, result_dtype(result_dtype(t.dtype(), lo), hi), fn::Clamp<double>{lo, hi});
}

// ---- comparisons and masks ----------------------------------------------------------------

Tensor eq(const Tensor& a, const Tensor& b) { return compare("eq", a, b, fn::Eq{}); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare("ne", a, b, fn::Ne{}); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare("lt", a, b, fn::Lt{}); }
Tensor le(const Tensor& a, const Tensor& b) { return compare("le", a, b, fn::Le{}); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare("gt", a, b, fn::Gt{}); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare("ge", a, b, fn::Ge{}); }
Tensor eq(const Tensor& a, double b) { return compare_scalar("eq", a, b, fn::Eq{}); }
Tensor ne(const Tensor& a, double b) { return compare_scalar("ne", a, b, fn::Ne{}); }
Tensor lt(const Tensor& a, double b) { return compare_scalar("lt", a, b, fn::Lt{}); }
Tensor le(const Tensor& a, double b) { return compare_scalar("le", a, b, fn::Le{}); }
Tensor gt(const Tensor& a, double b) { return compare_scalar("gt", a, b, fn::Gt{}); }
Tensor ge(const Tensor& a, double b) { return compare_scalar("ge", a, b, fn::Ge{}); }

Tensor logical_and(const Tensor& a, const Tensor& b) {
    need(a, "logical_and", "a");
    need(b, "logical_and", "b");
    return broadcast_map("logical_and", ne(a, 0.0), ne(b, 0.0), DType::b8, [](std::uint8_t x, std::uint8_t y) { return x && y; });
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
    need(a, "logical_or", "a");
    need(b, "logical_or", "b");
    return broadcast_map("logical_or", ne(a, 0.0), ne(b, 0.0), DType::b8, [](std::uint8_t x, std::uint8_t y) { return x || y; });
}
Tensor logical_not(const Tensor& t) {
    need(t, "logical_not", "input");
    return eq(t, 0.0);
}

namespace {
// t as a contiguous tensor of `shape`: read in place when it has that shape already, else
// repeated into it (broadcast_to).
Tensor expanded(const Tensor& t, const Shape& shape) { return t.shape() == shape ? t.contiguous() : broadcast_to(t, shape); }
}  // namespace

Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b) {
    need_mask(mask, "where");
    need(a, "where", "a");
    need(b, "where", "b");
    const Shape shape = broadcast_shapes(broadcast_shapes(mask.shape(), a.shape(), "where"), b.shape(), "where");
    const DType rt = result_dtype(a.dtype(), b.dtype());
    const Tensor M = expanded(mask, shape), A = expanded(a.to(rt), shape), B = expanded(b.to(rt), shape);
    Tensor out = Tensor::empty(shape, rt);
    const std::uint8_t* pm = M.data<std::uint8_t>();
    const std::int64_t n = out.numel();
    with_element_bytes(dtype_size(rt), [&](auto e) {
        using E = decltype(e);
        const E* pa = static_cast<const E*>(A.raw_data());
        const E* pb = static_cast<const E*>(B.raw_data());
        E* po = static_cast<E*>(out.raw_data());
        for (std::int64_t i = 0; i < n; ++i) {  // as bits, without a branch: random masks vectorise
            const E m = static_cast<E>(-static_cast<E>(pm[i] != 0));
            po[i] = static_cast<E>((pa[i] & m) | (pb[i] & ~m));
        }
    });
    return out;
}

Tensor masked_fill(const Tensor& t, const Tensor& mask, double value) {
    need(t, "masked_fill", "input");
    need_mask(mask, "masked_fill");
    if (broadcast_shapes(t.shape(), mask.shape(), "masked_fill") != t.shape())
        fail("mask", "masked_fill: mask ", shape_str(mask.shape()), " does not broadcast to the input's shape ", shape_str(t.shape()));
    const Tensor M = expanded(mask, t.shape());
    const Tensor v = Tensor::full({}, value, t.dtype());
    Tensor out = t.clone();
    const std::uint8_t* pm = M.data<std::uint8_t>();
    const std::int64_t n = out.numel();
    with_element_bytes(dtype_size(t.dtype()), [&](auto e) {
        using E = decltype(e);
        const E fill = *static_cast<const E*>(v.raw_data());
        E* po = static_cast<E*>(out.raw_data());
        for (std::int64_t i = 0; i < n; ++i) {
            const E m = static_cast<E>(-static_cast<E>(pm[i] != 0));
            po[i] = static_cast<E>((fill & m) | (po[i] & ~m));
        }
    });
    return out;
}

}  // namespace tg
