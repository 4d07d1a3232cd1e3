// Lesson 1: gradient-checking a user-defined op (docs/lessons.md, section 1).
//
// You write an op's forward (any code at all) and its backward, and ag::record() puts the
// pair on the tape. Three checks from tapegrad/autograd/gradcheck.hpp then say whether the
// backward is right, and each one catches a different kind of mistake:
//
//   gradcheck      the tape's gradient Jᵀv against central finite differences, in f64
//                  (catches a wrong derivative)
//   gradgradcheck  gradcheck applied to the backward itself, i.e. second derivatives
//                  (catches a backward computed off the tape, which cannot be differentiated)
//   check_adjoint  for an op linear in x: ⟨A x, y⟩ = ⟨x, Aᵀ y⟩, exact up to rounding, no step
//                  size, in the op's own dtype (catches a backward that is not the transpose)
//
// Two ops are written here, each checked with everything that applies to it:
//   swish(x) = x·σ(x)                            non-linear: gradcheck, gradgradcheck
//   cumsum(x)[.., j] = Σ_{i ≤ j} x[.., i]         linear:     gradcheck, gradgradcheck, check_adjoint
// then one mistake of each kind is planted, and the program checks that it is caught.
//
// Run: build/release/custom_op   (prints the report; exit 0 when every claim holds; ctest runs it)
#include <cstdio>
#include <string>

#include "lesson.hpp"
#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/core/factories.hpp"

using namespace tg;
using namespace tg::ag;
using tg::lesson::claim;

// ---------------------------------------------------------------------------------------
// Op 1: swish(x) = x·σ(x), element-wise.
//   ∂swish/∂x = σ(x) + x·σ(x)·(1 − σ(x)),  so the backward maps g to g·(σ + x·σ·(1 − σ)).
// ---------------------------------------------------------------------------------------

// The forward value, computed without recording the pieces (raw loops over
// Tensor::data<T>() would do just as well: the tape only sees what record() is given).
Tensor swish_value(const Variable& x) {
    NoGradGuard no_grad;
    return mul(x, sigmoid(x)).value();
}

// The backward, written with differentiable ops (sigmoid, mul, affine, add): when the engine
// runs it with create_graph, it is recorded too, so it can be differentiated again.
Variable swish_backward(const Variable& x, const Variable& g) {
    const Variable s = sigmoid(x);
    const Variable ds = mul(s, affine(s, -1, 1));  // σ' = σ·(1 − σ)   (affine(s, a, b) = a·s + b)
    return mul(g, add(s, mul(x, ds)));
}

Variable swish(const Variable& x) {
    return record("swish", swish_value(x), {x}, {.inputs = {0}},  // the backward reads input 0
                  [](const SavedContext& ctx, const Variable& g) -> Grads {
                      return {swish_backward(ctx.input(0), g)};  // one gradient per input
                  });
}

// ---------------------------------------------------------------------------------------
// Op 2: cumsum along the last axis, y[r, j] = Σ_{i ≤ j} x[r, i]: a linear map y = A x with A
// lower-triangular (all ones on and below the diagonal). The backward of a linear map is
// its transpose Aᵀ, upper-triangular: (Aᵀg)[r, i] = Σ_{j ≥ i} g[r, j], the *reverse*
// cumulative sum. So the op comes as a pair, each recorded op the other's backward (the
// library's conv and conv_transpose are such a pair): second derivatives come for free.
// ---------------------------------------------------------------------------------------

// Plain loops over contiguous rows of length n: the forward can be any code.
template <class T>
void scan_rows(const T* x, T* y, std::int64_t rows, std::int64_t n, bool reverse) {
    for (std::int64_t r = 0; r < rows; ++r) {
        T running = 0;
        for (std::int64_t k = 0; k < n; ++k) {
            const std::int64_t j = reverse ? n - 1 - k : k;
            running += x[r * n + j];
            y[r * n + j] = running;
        }
    }
}

// The running sum along the last axis (from the end when `reverse`), in f32 or f64.
Tensor scan_last_axis(const Tensor& input, bool reverse) {
    const Tensor x = input.contiguous();
    if (x.ndim() == 0 || x.shape().back() == 0) fail("x", "cumsum: x has shape ", x.shape(), ", needs a last axis");
    Tensor y = Tensor::empty(x.shape(), x.dtype());
    const std::int64_t n = x.shape().back(), rows = x.numel() / n;
    if (x.dtype() == DType::f64) scan_rows(x.data<double>(), y.data<double>(), rows, n, reverse);
    else if (x.dtype() == DType::f32) scan_rows(x.data<float>(), y.data<float>(), rows, n, reverse);
    else fail("x", "cumsum: dtype ", dtype_name(x.dtype()), " is not supported (f32 or f64)");
    return y;
}

Variable reverse_cumsum(const Variable& x);

Variable cumsum(const Variable& x) {
    // A linear op's backward needs no saved input (Save{}): Aᵀg does not depend on x.
    return record("cumsum", scan_last_axis(x.value(), false), {x}, {},
                  [](const SavedContext&, const Variable& g) -> Grads { return {reverse_cumsum(g)}; });
}

Variable reverse_cumsum(const Variable& x) {
    return record("reverse_cumsum", scan_last_axis(x.value(), true), {x}, {},
                  [](const SavedContext&, const Variable& g) -> Grads { return {cumsum(g)}; });
}

// ---------------------------------------------------------------------------------------
// Three planted mistakes, one for each check.
// ---------------------------------------------------------------------------------------

// (a) A wrong derivative: the x·σ' term is dropped. gradcheck sees it.
Variable swish_dropped_term(const Variable& x) {
    return record("swish_dropped_term", swish_value(x), {x}, {.inputs = {0}},
                  [](const SavedContext& ctx, const Variable& g) -> Grads { return {mul(g, sigmoid(ctx.input(0)))}; });
}

// (b) The right numbers, computed off the tape (as a raw kernel wrapped in a constant
// would be): first derivatives are right, so gradcheck passes, but the tape cannot see
// how the gradient depends on x and g. gradgradcheck sees it.
Variable swish_off_tape(const Variable& x) {
    return record("swish_off_tape", swish_value(x), {x}, {.inputs = {0}},
                  [](const SavedContext& ctx, const Variable& g) -> Grads {
                      NoGradGuard no_grad;  // the mistake
                      return {swish_backward(ctx.input(0), g)};
                  });
}

// (c) A backward that is not the transpose: cumsum's gradient taken as cumsum(g) instead of
// reverse_cumsum(g) (A where Aᵀ is due). check_adjoint sees it, with no step size at all.
Variable cumsum_untransposed(const Variable& x) {
    return record("cumsum_untransposed", scan_last_axis(x.value(), false), {x}, {},
                  [](const SavedContext&, const Variable& g) -> Grads { return {cumsum(g)}; });
}

// For printing: "ok" or "FAIL", and a report's failure lines indented under a heading.
const char* verdict(const CheckReport& r) { return r.ok ? "ok" : "FAIL"; }
std::string indent(const std::string& lines) {
    std::string out = "  ";
    for (const char ch : lines) out += ch == '\n' ? std::string("\n  ") : std::string(1, ch);
    return out.substr(0, out.size() - 2);  // no indent after the last newline
}

int main() try {
    // Gradient checks run in f64: finite differences in f32 are too coarse to trust.
    const Tensor x_swish = Tensor::from({2, 3}, {-2.0, -0.5, 0.0, 0.25, 1.0, 3.0}, DType::f64);
    Generator gen(0);
    const Tensor x_cumsum = randn({2, 5}, DType::f64, gen);

    // The function under test: inputs in, one result out.
    const Function f_swish = [](const std::vector<Variable>& in) { return swish(in[0]); };
    const Function f_cumsum = [](const std::vector<Variable>& in) { return cumsum(in[0]); };
    // The names label the inputs in the report's "tensor" column.
    const CheckOptions opt_swish{.names = {"x (swish)"}}, opt_cumsum{.names = {"x (cumsum)"}},
        opt_f32{.names = {"x (cumsum, f32)"}};

    // 1. The correct ops: every check passes.
    CheckReport report = gradcheck(f_swish, {x_swish}, opt_swish);
    report.add(gradgradcheck(f_swish, {x_swish}, opt_swish));
    report.add(gradcheck(f_cumsum, {x_cumsum}, opt_cumsum));
    report.add(gradgradcheck(f_cumsum, {x_cumsum}, opt_cumsum));
    report.add(check_adjoint(f_cumsum, {x_cumsum}, 0, opt_cumsum));  // cumsum is linear in input 0
    // The adjoint identity needs no finite differences, so it also checks the f32 code path
    // as it runs (tolerance scaled by f32's epsilon).
    report.add(check_adjoint(f_cumsum, {x_cumsum.to(DType::f32)}, 0, opt_f32));
    std::printf("The report for swish (rows 1-3) and cumsum (rows 4-10):\n\n%s\n", report.table().c_str());
    claim(report.ok, "swish and cumsum pass gradcheck, gradgradcheck and (cumsum) check_adjoint:\n",
          report.failures());

    // check_adjoint refuses an op that is not linear, instead of reporting a meaningless identity.
    const CheckReport not_linear = check_adjoint(f_swish, {x_swish}, 0, opt_swish);
    std::printf("check_adjoint on swish (not linear):\n%s\n", indent(not_linear.failures()).c_str());
    claim(!not_linear.ok && not_linear.rows.at(0).check == "linearity", "check_adjoint rejects swish as not linear");

    // 2. The planted mistakes. Each must fail the check made for it.
    const Function f_dropped = [](const std::vector<Variable>& in) { return swish_dropped_term(in[0]); };
    const Function f_off_tape = [](const std::vector<Variable>& in) { return swish_off_tape(in[0]); };
    const Function f_untransposed = [](const std::vector<Variable>& in) { return cumsum_untransposed(in[0]); };

    const CheckReport a = gradcheck(f_dropped, {x_swish}, opt_swish);
    std::printf("(a) swish without the x·σ' term: gradcheck %s\n%s\n", verdict(a), indent(a.failures()).c_str());
    claim(!a.ok, "gradcheck catches the dropped x·σ' term");

    const CheckReport b1 = gradcheck(f_off_tape, {x_swish}, opt_swish);
    const CheckReport b2 = gradgradcheck(f_off_tape, {x_swish}, opt_swish);
    std::printf("(b) swish with its backward off the tape: gradcheck %s, gradgradcheck %s\n%s\n", verdict(b1),
                verdict(b2), indent(b2.failures()).c_str());
    claim(b1.ok, "the off-tape backward has the right first derivatives (gradcheck passes)");
    claim(!b2.ok, "gradgradcheck catches the backward computed off the tape");

    const CheckReport c = check_adjoint(f_untransposed, {x_cumsum}, 0, opt_cumsum);
    const CheckReport c_fd = gradcheck(f_untransposed, {x_cumsum}, opt_cumsum);  // finite differences see it too
    std::printf("(c) cumsum with A instead of Aᵀ as its backward: check_adjoint %s (gradcheck %s)\n%s\n", verdict(c),
                verdict(c_fd), indent(c.failures()).c_str());
    claim(!c.ok && c.rows.at(0).check == "adjoint", "check_adjoint catches the untransposed backward");
    claim(!c_fd.ok, "gradcheck catches the untransposed backward too");

    std::printf("every claim holds\n");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
}
