// Each op: the forward value from a raw kernel, then record() with the backward beside it.
#include "tapegrad/autograd/ops.hpp"

#include <cmath>

#include "tapegrad/autograd/indexing.hpp"
#include "tapegrad/ops/activation.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/ops/math.hpp"
#include "tapegrad/ops/matmul.hpp"
#include "tapegrad/ops/reduce.hpp"
#include "tapegrad/ops/shape_ops.hpp"

namespace tg::ag {

namespace {

Variable none() { return Variable(); }

// slice's adjoint: g written into zeros of `shape` at begin, begin+step, ... of `axis`.
Variable slice_scatter(const Variable& a, const Shape& shape, int axis, std::int64_t begin, std::int64_t step) {
    const std::int64_t m = a.shape()[static_cast<std::size_t>(axis)];
    return record("slice_scatter", tg::slice_scatter(a.value(), shape, axis, begin, step), {a}, {},
                  [axis, begin, m, step](const SavedContext&, const Variable& g) -> Grads {
                      return {slice(g, axis, begin, begin + (m - 1) * step + 1, step)};
                  });
}

std::int64_t count_of(const Shape& shape, const std::vector<int>& axes) {
    std::int64_t n = 1;
    for (int a : axes) n *= shape[static_cast<std::size_t>(a)];
    return n;
}

void same_shape(const Variable& a, const Variable& b, const char* op, const char* an, const char* bn) {
    if (a.shape() != b.shape())
        fail("shape", op, ": ", an, " has shape ", shape_str(a.shape()), " but ", bn, " has shape ", shape_str(b.shape()));
}

// The ag ops take float Variables of one dtype (the eager functions would promote).
const Tensor& float_value(const Variable& v, const char* op, const char* which = "input") {
    need_float(v.value(), op, which);
    return v.value();
}

void same_float_dtype(const Variable& a, const Variable& b, const char* op) {
    need_float(a.value(), op, "operand a");
    need_float(b.value(), op, "operand b");
    if (a.dtype() != b.dtype())
        fail("dtype", op, ": operand dtypes differ (", dtype_name(a.dtype()), " ", shape_str(a.shape()), " and ",
             dtype_name(b.dtype()), " ", shape_str(b.shape()), ")");
}

}  // namespace

// ---- element-wise arithmetic ----------------------------------------------------------

Variable add(const Variable& a, const Variable& b) {
    same_float_dtype(a, b, "add");
    const Shape sa = a.shape(), sb = b.shape();
    return record("add", tg::add(a.value(), b.value()), {a, b}, {},
                  [sa, sb](const SavedContext&, const Variable& g) -> Grads { return {sum_to(g, sa), sum_to(g, sb)}; });
}

Variable sub(const Variable& a, const Variable& b) {
    same_float_dtype(a, b, "sub");
    const Shape sa = a.shape(), sb = b.shape();
    return record("sub", tg::sub(a.value(), b.value()), {a, b}, {},
                  [sa, sb](const SavedContext& c, const Variable& g) -> Grads {
                      return {sum_to(g, sa), c.needs_grad(1) ? sum_to(neg(g), sb) : none()};
                  });
}

// doc-begin: mul
Variable mul(const Variable& a, const Variable& b) {
    same_float_dtype(a, b, "mul");
    const Shape sa = a.shape(), sb = b.shape();
    return record("mul", tg::mul(a.value(), b.value()), {a, b}, {.inputs = {0, 1}},
                  [sa, sb](const SavedContext& c, const Variable& g) -> Grads {
                      return {c.needs_grad(0) ? sum_to(mul(g, c.input(1)), sa) : none(),
                              c.needs_grad(1) ? sum_to(mul(g, c.input(0)), sb) : none()};
                  });
}
// doc-end: mul

Variable div(const Variable& a, const Variable& b) {
    same_float_dtype(a, b, "div");
    const Shape sa = a.shape(), sb = b.shape();
    return record("div", tg::div(a.value(), b.value()), {a, b}, {.inputs = {0, 1}},
                  [sa, sb](const SavedContext& c, const Variable& g) -> Grads {
                      const Variable b = c.input(1);
                      const Variable q = div(g, b);  // ∂/∂a = g/b, ∂/∂b = −(g/b)·(a/b)
                      return {sum_to(q, sa), c.needs_grad(1) ? sum_to(neg(mul(q, div(c.input(0), b))), sb) : none()};
                  });
}

Variable neg(const Variable& a) {
    return record("neg", tg::neg(float_value(a, "neg")), {a}, {},
                  [](const SavedContext&, const Variable& g) -> Grads { return {neg(g)}; });
}

Variable affine(const Variable& a, double s, double shift) {
    return record("affine", tg::affine(a.value(), s, shift), {a}, {},
                  [s](const SavedContext&, const Variable& g) -> Grads { return {affine(g, s, 0)}; });
}

// ---- element-wise functions -----------------------------------------------------------

Variable exp(const Variable& a) {
    return record("exp", tg::exp(float_value(a, "exp")), {a}, {.inputs = {}, .output = true},
                  [](const SavedContext& c, const Variable& g) -> Grads { return {mul(g, c.output())}; });
}

Variable log(const Variable& a) {
    return record("log", tg::log(float_value(a, "log")), {a}, {.inputs = {0}},
                  [](const SavedContext& c, const Variable& g) -> Grads { return {div(g, c.input(0))}; });
}

// g · step(x, 0, 1), recorded: linear in g, its mask a constant (whose own derivative is zero
// almost everywhere), so its backward is itself.
Variable relu_grad(const Variable& g, const Tensor& x) {
    return record("relu_grad", tg::relu_grad(g.value(), x), {g}, {},
                  [x](const SavedContext&, const Variable& gg) -> Grads { return {relu_grad(gg, x)}; });
}

Variable relu(const Variable& a) {
    return record("relu", tg::relu(float_value(a, "relu")), {a}, {.inputs = {0}},
                  [](const SavedContext& c, const Variable& g) -> Grads {
                      // g where x > 0, and at NaN (PyTorch's relu passes the gradient there, so
                      // anomaly mode sees the NaN), g·0 elsewhere: one vector pass
                      return {relu_grad(g, c.input(0).value())};
                  });
}

Variable leaky_relu(const Variable& a, double slope) {
    return record("leaky_relu", tg::leaky_relu(a.value(), slope), {a}, {.inputs = {0}},
                  [slope](const SavedContext& c, const Variable& g) -> Grads {
                      return {mul(g, constant(step(c.input(0).value(), slope)))};
                  });
}

Variable sigmoid(const Variable& a) {
    return record("sigmoid", tg::sigmoid(float_value(a, "sigmoid")), {a}, {.inputs = {}, .output = true},
                  [](const SavedContext& c, const Variable& g) -> Grads {
                      const Variable y = c.output();  // σ' = σ(1 − σ)
                      return {mul(g, mul(y, affine(y, -1, 1)))};
                  });
}

Variable tanh(const Variable& a) {
    return record("tanh", tg::tanh(float_value(a, "tanh")), {a}, {.inputs = {}, .output = true},
                  [](const SavedContext& c, const Variable& g) -> Grads {
                      const Variable y = c.output();  // tanh' = 1 − tanh²
                      return {mul(g, affine(mul(y, y), -1, 1))};
                  });
}

namespace {

// gelu's slope as a recorded op (its own backward uses the second derivative), so gelu can be
// differentiated twice.
Variable gelu_slope(const Variable& x, bool tanh_approximation) {
    return record("gelu_slope", gelu_derivative(x.value(), tanh_approximation, 1), {x}, {.inputs = {0}},
                  [tanh_approximation](const SavedContext& c, const Variable& g) -> Grads {
                      return {mul(g, constant(gelu_derivative(c.input(0).value(), tanh_approximation, 2)))};
                  });
}

}  // namespace

Variable gelu(const Variable& a, bool tanh_approximation) {
    return record("gelu", tg::gelu(a.value(), tanh_approximation), {a}, {.inputs = {0}},
                  [tanh_approximation](const SavedContext& c, const Variable& g) -> Grads {
                      return {mul(g, gelu_slope(c.input(0), tanh_approximation))};
                  });
}

Variable softplus(const Variable& a) {
    return record("softplus", tg::softplus(float_value(a, "softplus")), {a}, {.inputs = {0}},
                  [](const SavedContext& c, const Variable& g) -> Grads { return {mul(g, sigmoid(c.input(0)))}; });
}

Variable sqrt(const Variable& a) {
    return record("sqrt", tg::sqrt(float_value(a, "sqrt")), {a},
                  {.inputs = {}, .output = true},
                  [](const SavedContext& c, const Variable& g) -> Grads { return {div(affine(g, 0.5), c.output())}; });
}

Variable rsqrt(const Variable& a) {
    return record("rsqrt", tg::rsqrt(float_value(a, "rsqrt")), {a},
                  {.inputs = {}, .output = true},
                  [](const SavedContext& c, const Variable& g) -> Grads {
                      const Variable y = c.output();  // (x^−½)' = −½·y³
                      return {mul(g, affine(mul(y, mul(y, y)), -0.5))};
                  });
}

Variable abs(const Variable& a) {
    return record("abs", tg::abs(float_value(a, "abs")), {a}, {.inputs = {0}},
                  [](const SavedContext& c, const Variable& g) -> Grads { return {mul(g, constant(tg::sign(c.input(0).value())))}; });
}

Variable sin(const Variable& a) {
    return record("sin", tg::sin(float_value(a, "sin")), {a}, {.inputs = {0}},
                  [](const SavedContext& c, const Variable& g) -> Grads { return {mul(g, cos(c.input(0)))}; });
}

Variable cos(const Variable& a) {
    return record("cos", tg::cos(float_value(a, "cos")), {a}, {.inputs = {0}},
                  [](const SavedContext& c, const Variable& g) -> Grads { return {neg(mul(g, sin(c.input(0))))}; });
}

Variable pow(const Variable& a, double p) {
    return record("pow", tg::pow(float_value(a, "pow"), p), {a}, {.inputs = {0}},
                  [p](const SavedContext& c, const Variable& g) -> Grads {
                      return {mul(g, scale(pow(c.input(0), p - 1), p))};
                  });
}

Variable pow(const Variable& a, const Variable& b) {
    same_float_dtype(a, b, "pow");
    const Shape sa = a.shape(), sb = b.shape();
    return record("pow", tg::pow(a.value(), b.value()), {a, b}, {.inputs = {0, 1}},
                  [sa, sb](const SavedContext& c, const Variable& g) -> Grads {
                      const Variable x = c.input(0), y = c.input(1);
                      return {c.needs_grad(0) ? sum_to(mul(g, mul(y, pow(x, affine(y, 1, -1)))), sa) : none(),
                              c.needs_grad(1) ? sum_to(mul(g, mul(pow(x, y), log(x))), sb) : none()};
                  });
}

Variable clamp(const Variable& a, double lo, double hi) {
    return record("clamp", tg::clamp(float_value(a, "clamp"), lo, hi), {a}, {.inputs = {0}},
                  [lo, hi](const SavedContext& c, const Variable& g) -> Grads {
                      const Tensor x = c.input(0).value();
                      return {masked_fill(g, logical_or(lt(x, lo), gt(x, hi)), 0.0)};
                  });
}

Variable where(const Tensor& mask, const Variable& a, const Variable& b) {
    const Shape sa = a.shape(), sb = b.shape();
    return record("where", (same_float_dtype(a, b, "where"), tg::where(mask, a.value(), b.value())), {a, b}, {},
                  [mask, sa, sb](const SavedContext& c, const Variable& g) -> Grads {
                      return {c.needs_grad(0) ? sum_to(masked_fill(g, logical_not(mask), 0.0), sa) : none(),
                              c.needs_grad(1) ? sum_to(masked_fill(g, mask, 0.0), sb) : none()};
                  });
}

Variable masked_fill(const Variable& a, const Tensor& mask, double value) {
    return record("masked_fill", tg::masked_fill(float_value(a, "masked_fill"), mask, value), {a}, {},
                  [mask](const SavedContext&, const Variable& g) -> Grads { return {masked_fill(g, mask, 0.0)}; });
}

Variable div(const Variable& a, double s) {
    if (!a.defined()) fail("input", "div: a is undefined");
    return div(a, constant(Tensor::full({}, s, a.dtype())));
}

Variable div(double s, const Variable& a) {
    if (!a.defined()) fail("input", "div: b is undefined");
    return div(constant(Tensor::full({}, s, a.dtype())), a);
}

// ---- shapes ---------------------------------------------------------------------------

Variable reshape(const Variable& a, const Shape& shape) {
    const Shape in = a.shape();
    if (shape == in) return a;
    return record("reshape", a.value().reshape(shape), {a}, {},
                  [in](const SavedContext&, const Variable& g) -> Grads { return {reshape(g, in)}; });
}

Variable permute(const Variable& a, const std::vector<int>& axes) {
    Tensor y = a.value().permute(axes);  // validates the permutation
    std::vector<int> inv(axes.size());
    for (std::size_t i = 0; i < axes.size(); ++i) inv[static_cast<std::size_t>(axes[i])] = static_cast<int>(i);
    return record("permute", std::move(y), {a}, {},
                  [inv](const SavedContext&, const Variable& g) -> Grads { return {permute(g, inv)}; });
}

Variable transpose(const Variable& a) {
    if (a.ndim() != 2) fail("shape", "transpose: needs a matrix, got shape ", shape_str(a.shape()));
    return permute(a, {1, 0});
}

Variable slice(const Variable& a, int axis, std::int64_t begin, std::int64_t end, std::int64_t step) {
    const int nd = a.ndim();
    const int ax = axis < 0 ? axis + nd : axis;
    Tensor y = a.value().slice(ax, begin, end, step);  // validates the range
    const Shape in = a.shape();
    return record("slice", std::move(y), {a}, {}, [in, ax, begin, step](const SavedContext&, const Variable& g) -> Grads {
        return {slice_scatter(g, in, ax, begin, step)};
    });
}

Variable cat(const std::vector<Variable>& parts, int axis) {
    std::vector<Tensor> values;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (!parts[i].defined()) fail("inputs", "cat: part ", i, " of ", parts.size(), " is undefined");
        values.push_back(parts[i].value());
    }
    Tensor y = tg::cat(values, axis);
    const int ax = axis < 0 ? axis + y.ndim() : axis;
    std::vector<std::int64_t> sizes;
    for (const Tensor& v : values) sizes.push_back(v.shape()[static_cast<std::size_t>(ax)]);
    return record("cat", std::move(y), parts, {}, [ax, sizes](const SavedContext&, const Variable& g) -> Grads {
        Grads out;
        std::int64_t at = 0;
        for (std::int64_t s : sizes) {
            out.push_back(slice(g, ax, at, at + s));
            at += s;
        }
        return out;
    });
}

Variable broadcast_to(const Variable& a, const Shape& shape) {
    const Shape in = a.shape();
    if (shape == in) return a;
    return record("broadcast_to", tg::broadcast_to(a.value(), shape), {a}, {},
                  [in](const SavedContext&, const Variable& g) -> Grads { return {sum_to(g, in)}; });
}

Variable sum_to(const Variable& a, const Shape& shape) {
    const Shape in = a.shape();
    if (shape == in) return a;
    return record("sum_to", tg::sum_to(a.value(), shape), {a}, {},
                  [in](const SavedContext&, const Variable& g) -> Grads { return {broadcast_to(g, in)}; });
}

// ---- reductions -----------------------------------------------------------------------

Variable sum(const Variable& a, const std::vector<int>& axes, bool keepdim) {
    const Shape in = a.shape();
    const std::vector<int> ax = normalize_axes(axes, a.ndim(), "sum");
    Shape kept = in;
    for (int x : ax) kept[static_cast<std::size_t>(x)] = 1;
    return record("sum", reduce_sum(a.value(), ax, keepdim), {a}, {},
                  [in, kept](const SavedContext&, const Variable& g) -> Grads {
                      return {broadcast_to(reshape(g, kept), in)};
                  });
}

Variable mean(const Variable& a, const std::vector<int>& axes, bool keepdim) {
    const std::vector<int> ax = normalize_axes(axes, a.ndim(), "mean");
    return affine(sum(a, ax, keepdim), 1.0 / static_cast<double>(count_of(a.shape(), ax)), 0);
}

Variable softmax(const Variable& a, int axis) {
    return record("softmax", tg::softmax(a.value(), axis), {a}, {.inputs = {}, .output = true},
                  [axis](const SavedContext& c, const Variable& g) -> Grads {
                      const Variable y = c.output();  // y·(g − Σ g·y)
                      return {mul(y, sub(g, sum(mul(g, y), {axis}, true)))};
                  });
}

Variable log_softmax(const Variable& a, int axis) {
    return record("log_softmax", tg::log_softmax(a.value(), axis), {a}, {.inputs = {}, .output = true},
                  [axis](const SavedContext& c, const Variable& g) -> Grads {
                      return {sub(g, mul(exp(c.output()), sum(g, {axis}, true)))};  // g − softmax·Σg
                  });
}

// ---- matmul ---------------------------------------------------------------------------

Variable matmul(const Variable& a, const Variable& b) {
    const Shape sa = a.shape(), sb = b.shape();
    return record("matmul", tg::matmul(a.value(), b.value()), {a, b}, {.inputs = {0, 1}},
                  [sa, sb](const SavedContext& c, const Variable& g) -> Grads {
                      // dA = g·Bᵀ, dB = Aᵀ·g, each summed over the batch dims it was broadcast along
                      return {c.needs_grad(0) ? sum_to(matmul(g, transpose(c.input(1), -2, -1)), sa) : none(),
                              c.needs_grad(1) ? sum_to(matmul(transpose(c.input(0), -2, -1), g), sb) : none()};
                  });
}

Variable linear(const Variable& x, const Variable& W, const Variable& bias, bool relu) {
    std::vector<Variable> inputs{x, W};
    if (bias.defined()) inputs.push_back(bias);
    return record(relu ? "linear_relu" : "linear", tg::linear(x.value(), W.value(), bias.defined() ? bias.value() : Tensor(), relu),
                  inputs, {.inputs = {0, 1}, .output = relu},
                  [relu, has_bias = bias.defined()](const SavedContext& c, const Variable& g_out) -> Grads {
                      const Variable g = relu ? relu_grad(g_out, c.output().value()) : g_out;
                      // dW as the composition takes it, (xᵀ·g)ᵀ: gᵀ·x is the same sums, but a BLAS
                      // may order them otherwise for the other layout (OpenBLAS's Haswell dgemm does
                      // at its edge columns), and these gradients are the composition's bits.
                      Grads out{c.needs_grad(0) ? matmul(g, c.input(1)) : none(),
                                c.needs_grad(1) ? transpose(matmul(transpose(c.input(0)), g)) : none()};
                      if (has_bias) out.push_back(c.needs_grad(2) ? sum(g, {0}) : none());
                      return out;
                  });
}

// ---- losses (compositions: their gradients come from the ops above) ------------------

Variable mse_loss(const Variable& pred, const Variable& target) {
    same_shape(pred, target, "mse_loss", "pred", "target");
    const Variable d = sub(pred, target);
    return mean(mul(d, d));
}

Variable cross_entropy(const Variable& logits, const Variable& labels) {
    const Shape& ls = logits.shape();
    if (logits.ndim() < 2) fail("logits", "cross_entropy: logits must be [N, C, ...], got ", shape_str(ls));
    Shape want{ls[0]};
    want.insert(want.end(), ls.begin() + 2, ls.end());
    if (labels.shape() != want)
        fail("labels", "cross_entropy: labels have shape ", shape_str(labels.shape()), ", logits ", shape_str(ls),
             " need labels of shape ", shape_str(want));
    if (labels.dtype() != DType::i32 && labels.dtype() != DType::i64)
        fail("labels", "cross_entropy: labels must be i32 or i64 class indices, got ", dtype_name(labels.dtype()));
    const std::int64_t N = ls[0], C = ls[1], P = N == 0 ? 0 : labels.numel() / N;
    const std::vector<double> lab = labels.value().values();
    std::vector<double> onehot(static_cast<std::size_t>(logits.numel()), 0.0);
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t p = 0; p < P; ++p) {
            const double v = lab[static_cast<std::size_t>(n * P + p)];
            if (v < 0 || v >= static_cast<double>(C))
                fail("labels", "cross_entropy: label ", n * P + p, " is ", v, ", outside [0, ", C, ")");
            onehot[static_cast<std::size_t>((n * C + static_cast<std::int64_t>(v)) * P + p)] = 1.0;
        }
    const Variable t = constant(Tensor::from(ls, onehot, logits.dtype()));
    return affine(sum(mul(log_softmax(logits, 1), t)), -1.0 / static_cast<double>(N * P), 0);
}

Variable bce_with_logits(const Variable& logits, const Variable& target) {
    same_shape(logits, target, "bce_with_logits", "logits", "target");
    return mean(sub(softplus(logits), mul(logits, target)));
}

Variable add_channel_bias(const Variable& y, const Variable& b, Layout layout) {
    if (y.ndim() < 2) fail("shape", "add_channel_bias: the result must be [N, C, ...] or [N, ..., C], got ", shape_str(y.shape()));
    const std::size_t caxis = layout == Layout::NCX ? 1 : y.shape().size() - 1;
    const std::int64_t C = y.shape()[caxis];
    if (b.shape() != Shape{C})
        fail("bias", "add_channel_bias: bias has shape ", shape_str(b.shape()), ", the result ", shape_str(y.shape()),
             " has ", C, " channels");
    Shape bs(y.shape().size(), 1);
    bs[caxis] = C;
    return add(y, reshape(b, bs));
}

}  // namespace tg::ag
