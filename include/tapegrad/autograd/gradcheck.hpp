// Gradient checks users can call (the policy and its tolerances: docs/gradcheck.md).
//
//   gradcheck       the tape's vector-Jacobian product Jᵀv for a random cotangent v,
//                   against central finite differences of ⟨f(x), v⟩, in f64
//   gradgradcheck   the same for the map (x, v) ↦ Jᵀv computed with create_graph,
//                   i.e. the second derivatives
//   check_adjoint   first that f is linear in one input (f(a·x) = a·f(x) and
//                   f(x+y) = f(x) + f(y), in f64), then ⟨A x, y⟩ = ⟨x, Aᵀ y⟩; no step size
//   check_precision f's result and gradients in f32/f16/bf16 against f64 on the same
//                   (rounded) inputs, with tolerances scaled by the dtype's epsilon
//
// Each returns a report whose rows name the input, the worst element's index, the two
// values compared, the absolute and relative errors and the tolerance; report.ok says
// whether every row passed, report.table() prints them.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tapegrad/autograd/variable.hpp"

namespace tg::ag {

// The function under test: inputs in, one result out. Integer inputs are passed as
// constants and never differentiated.
using Function = std::function<Variable(const std::vector<Variable>& inputs)>;

struct CheckOptions {
    double eps = 1e-6;   // finite-difference step (f64)
    double atol = 1e-5;  // an element passes when |analytic − numeric| ≤ atol + rtol·|numeric|
    double rtol = 1e-3;
    // Finite differences cost two evaluations of f per element. 0 checks every element;
    // otherwise this many elements per input, drawn at random (seeded), are checked.
    std::int64_t max_elements = 0;
    std::uint64_t seed = 0;  // for v, the subset and the adjoint's random vectors
    std::vector<std::string> names;  // input names for the report (default "input i")
    // check_precision: how many times a value may be rounded to the low dtype on its way
    // through f and its backward (each op rounds its result once; a conv with a bias: 2).
    int roundings = 2;
};

struct CheckRow {
    std::string check;   // "gradcheck", "gradgradcheck", "adjoint", "f32 vs f64", ...
    std::string tensor;  // the input (or "output", or "grad <input>")
    std::int64_t checked = 0, total = 0;  // elements compared, of how many
    Shape index;         // the worst element (empty for an adjoint row)
    double a = 0;        // analytic | ⟨A x, y⟩ | low-precision value
    double b = 0;        // numeric  | ⟨x, Aᵀ y⟩ | f64 value
    // rel_err = abs_err / |b| (the adjoint: / Σ|terms|), NaN when that is 0; only the
    // tolerance decides (atol + rtol·|b| for gradcheck and gradgradcheck).
    double abs_err = 0, rel_err = 0, tol = 0;
    bool ok = true;
    std::string note;    // why a row failed, when the numbers alone do not say it
};

struct CheckReport {
    bool ok = true;
    std::vector<CheckRow> rows;
    void add(const CheckReport& other);
    // One line first: "all 7 checks pass", or "2 of 7 checks FAIL; first: <its failure line>".
    std::string summary() const;
    // The summary, then every row (under 80 columns, so a test framework's wrapping cannot
    // break them), a failing row marked FAIL and followed by its worst element (and note),
    // then once a legend of what the value columns hold for each kind of check.
    std::string table() const;
    // One line per failing row ("" when ok): "gradcheck x at [1, 2]: 0.5 vs 0.25 (|err| 0.25
    // > tol 0.00026, rel 1)", with "rel -" against a zero reference.
    std::string failures() const;
};

CheckReport gradcheck(const Function& f, const std::vector<Tensor>& inputs, const CheckOptions& opt = {});
CheckReport gradgradcheck(const Function& f, const std::vector<Tensor>& inputs, const CheckOptions& opt = {});
// f must be linear in inputs[linear_input] (the others are held fixed). First checks that
// it is, in f64 on random x, y and a random a < 0: f(a·x) = a·f(x) and f(x+y) = f(x)+f(y)
// element-wise within 64·ε·√n·(the largest magnitude involved); a violation gives one
// failing "linearity" row whose note reads "not linear in input k (name): f(a·x) != a·f(x)
// (max diff ...)" and the identity is not evaluated. Otherwise an "adjoint" row, run in the
// inputs' dtype, passes when |⟨A x, y⟩ − ⟨x, Aᵀ y⟩| ≤ 4·ε·√(n_x + n_y)·(Σ|(Ax)_i y_i| +
// Σ|x_j (Aᵀy)_j|), followed by the passing "linearity" row.
CheckReport check_adjoint(const Function& f, const std::vector<Tensor>& inputs, int linear_input,
                          const CheckOptions& opt = {});
// Runs f and its backward in `dtype` and in f64 on the inputs rounded to `dtype`; each
// tensor (result, then each gradient) passes when
//     max|low − f64| ≤ (roundings·ε + 4·√n·ε_acc)·max|f64|
// with ε the dtype's epsilon, ε_acc that of the accumulation type (f32 for f32, f16 and
// bf16, whose kernels accumulate in f32) and n = reduction_length, the longest sum behind
// one element (I_g·∏K for a conv, N·∏Y for its weight gradient).
CheckReport check_precision(const Function& f, const std::vector<Tensor>& inputs, DType dtype,
                            std::int64_t reduction_length, const CheckOptions& opt = {});

}  // namespace tg::ag
