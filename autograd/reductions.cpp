#include "tapegrad/autograd/reductions.hpp"

#include <cmath>

#include "tapegrad/autograd/indexing.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/ops/math.hpp"
#include "tapegrad/ops/reduce.hpp"

namespace tg::ag {

namespace {

// The input's shape with the reduced axes as size 1, and how many elements each result sums.
struct Kept {
    Shape shape;
    std::int64_t n = 1;
};

Kept kept_of(const Shape& in, const std::vector<int>& axes, const char* op) {
    Kept k{in, 1};
    for (int a : normalize_axes(axes, static_cast<int>(in.size()), op)) {
        k.n *= in[static_cast<std::size_t>(a)];
        k.shape[static_cast<std::size_t>(a)] = 1;
    }
    return k;
}

// A result (or its gradient) of the reduction, reshaped to keepdim form and broadcast to `in`.
Variable spread(const Variable& v, const Kept& k, const Shape& in) { return broadcast_to(reshape(v, k.shape), in); }

// Π of the other elements of each reduced row, exactly (zeros handled), shaped like x.
Tensor prod_of_others(const Tensor& x, const std::vector<int>& axes) {
    const Tensor zero = eq(x, 0.0);
    const Tensor zeros_per_row = sum(zero, normalize_axes(axes, x.ndim(), "prod"), true);   // i64
    const Tensor nonzero_prod = prod(where(zero, Tensor::full({}, 1, x.dtype()), x), normalize_axes(axes, x.ndim(), "prod"), true);
    // 0 zeros: prod/x. 1 zero: at the zero, the product of the others; elsewhere 0. 2+: 0.
    const Tensor one_zero = eq(zeros_per_row, 1.0);
    const Tensor none = eq(zeros_per_row, 0.0);
    const Tensor plain = div(nonzero_prod, where(zero, Tensor::full({}, 1, x.dtype()), x));
    const Tensor at_zero = where(logical_and(one_zero, zero), nonzero_prod, Tensor::zeros({}, x.dtype()));
    return where(none, plain, at_zero);
}

bool any_zero(const Tensor& x) { return sum(eq(x, 0.0)).item() > 0; }

template <class Pick>
ValuesIndices extreme(const Variable& a, int axis, bool keepdim, const char* op, Pick pick) {
    if (!a.defined()) fail("input", op, ": the input is undefined");
    const tg::ValuesIndices r = pick(a.value(), axis, keepdim);
    const int ax = normalize_axis(axis, a.ndim(), op);
    const Shape in = a.shape();
    const Tensor idx = keepdim ? r.indices : r.indices.unsqueeze(ax);
    Variable v = record(op, r.values, {a}, {}, [in, ax, idx, keepdim](const SavedContext&, const Variable& g) -> Grads {
        const Variable gk = keepdim ? g : unsqueeze(g, ax);
        return {scatter_add(constant(Tensor::zeros(in, g.dtype())), ax, idx, gk)};
    });
    return {v, r.indices};
}

}  // namespace

Variable prod(const Variable& a, const std::vector<int>& axes, bool keepdim) {
    const Shape in = a.shape();
    const Kept k = kept_of(in, axes, "prod");
    return record("prod", tg::prod(a.value(), axes, keepdim), {a}, {.inputs = {0}, .output = true},
                  [in, k, axes](const SavedContext& c, const Variable& g) -> Grads {
                      const Variable x = c.input(0);
                      if (any_zero(x.value())) return {mul(spread(g, k, in), constant(prod_of_others(x.value(), axes)))};
                      return {div(mul(spread(g, k, in), spread(c.output(), k, in)), x)};
                  });
}

Variable var(const Variable& a, const std::vector<int>& axes, int correction, bool keepdim) {
    const Shape in = a.shape();
    const Kept k = kept_of(in, axes, "var");
    const double scale_by = 2.0 / static_cast<double>(k.n - correction);
    return record("var", tg::var(a.value(), axes, correction, keepdim), {a}, {.inputs = {0}},
                  [in, k, axes, scale_by](const SavedContext& c, const Variable& g) -> Grads {
                      const Variable x = c.input(0);
                      const Variable d = sub(x, mean(x, axes, true));
                      return {mul(spread(g, k, in), scale(d, scale_by))};
                  });
}

Variable std(const Variable& a, const std::vector<int>& axes, int correction, bool keepdim) {
    const Shape in = a.shape();
    const Kept k = kept_of(in, axes, "std");
    const double m = static_cast<double>(k.n - correction);
    return record("std", tg::std(a.value(), axes, correction, keepdim), {a}, {.inputs = {0}, .output = true},
                  [in, k, axes, m](const SavedContext& c, const Variable& g) -> Grads {
                      const Variable x = c.input(0);  // d std = (x − mean) / ((n − c)·std)
                      const Variable d = sub(x, mean(x, axes, true));
                      return {div(mul(spread(g, k, in), d), scale(spread(c.output(), k, in), m))};
                  });
}

Variable logsumexp(const Variable& a, const std::vector<int>& axes, bool keepdim) {
    const Shape in = a.shape();
    const Kept k = kept_of(in, axes, "logsumexp");
    return record("logsumexp", tg::logsumexp(a.value(), axes, keepdim), {a}, {.inputs = {0}, .output = true},
                  [in, k](const SavedContext& c, const Variable& g) -> Grads {
                      return {mul(spread(g, k, in), exp(sub(c.input(0), spread(c.output(), k, in))))};
                  });
}

ValuesIndices max(const Variable& a, int axis, bool keepdim) {
    return extreme(a, axis, keepdim, "max", [](const Tensor& x, int ax, bool kd) { return tg::max(x, ax, kd); });
}
ValuesIndices min(const Variable& a, int axis, bool keepdim) {
    return extreme(a, axis, keepdim, "min", [](const Tensor& x, int ax, bool kd) { return tg::min(x, ax, kd); });
}
Variable max(const Variable& a) { return reshape(max(reshape(a, {-1}), 0).values, {}); }
Variable min(const Variable& a) { return reshape(min(reshape(a, {-1}), 0).values, {}); }

}  // namespace tg::ag
