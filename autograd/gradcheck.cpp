#include "tapegrad/autograd/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <numeric>
#include <random>
#include <sstream>

namespace tg::ag {

namespace {

// |err| / |ref|, or NaN against a zero reference (a relative error there means nothing; the
// tolerance atol + rtol·|ref| still decides).
double relative(double err, double ref) { return ref == 0 ? NAN : err / std::fabs(ref); }


using MultiFunction = std::function<std::vector<Variable>(const std::vector<Variable>&)>;

Tensor random_normal(const Shape& shape, std::mt19937_64& rng) {
    std::normal_distribution<double> nd(0.0, 1.0);
    std::vector<double> v(static_cast<std::size_t>(shape_numel(shape)));
    for (double& x : v) x = nd(rng);
    return Tensor::from(shape, v, DType::f64);
}

std::string name_of(const CheckOptions& opt, std::size_t i) {
    return i < opt.names.size() && !opt.names[i].empty() ? opt.names[i] : "input " + std::to_string(i);
}

double dot(const Tensor& a, const Tensor& b) {
    const std::vector<double> x = a.values(), y = b.values();
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
    return s;
}

std::vector<Variable> make_vars(const std::vector<Tensor>& t, const std::vector<bool>& diff) {
    std::vector<Variable> v;
    for (std::size_t i = 0; i < t.size(); ++i) v.push_back(Variable(t[i], diff[i]));
    return v;
}

std::vector<bool> float_mask(const std::vector<Tensor>& t) {
    std::vector<bool> m;
    for (const Tensor& x : t) {
        if (!x.defined()) fail("inputs", "gradcheck: an input tensor is undefined");
        m.push_back(is_float(x.dtype()));
    }
    return m;
}

// Elements of an input to differentiate: all, or a seeded random subset (sorted).
std::vector<std::int64_t> pick_elements(std::int64_t n, std::int64_t max, std::mt19937_64& rng) {
    std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    if (max <= 0 || n <= max) return idx;
    for (std::int64_t i = 0; i < max; ++i) {
        std::uniform_int_distribution<std::int64_t> u(i, n - 1);
        std::swap(idx[static_cast<std::size_t>(i)], idx[static_cast<std::size_t>(u(rng))]);
    }
    idx.resize(static_cast<std::size_t>(max));
    std::sort(idx.begin(), idx.end());
    return idx;
}

// Vector-Jacobian products of F (several results) against finite differences of
// L(x) = Σ_k ⟨F_k(x), v_k⟩, per float input, in f64.
CheckReport check_vjp(const MultiFunction& F, std::vector<Tensor> inputs, const CheckOptions& opt,
                      const std::string& check, std::mt19937_64& rng) {
    const std::vector<bool> diff = float_mask(inputs);
    for (std::size_t i = 0; i < inputs.size(); ++i)
        if (diff[i]) inputs[i] = inputs[i].to(DType::f64).clone();

    // Analytic: one backward with the random cotangents.
    std::vector<Variable> vars = make_vars(inputs, diff);
    const std::vector<Variable> outs = F(vars);
    std::vector<Tensor> v;
    std::vector<Variable> roots, seeds, wrt;
    for (const Variable& o : outs) {
        v.push_back(o.defined() ? random_normal(o.shape(), rng) : Tensor());
        if (o.defined() && o.dtype() != DType::f64)
            fail("dtype", check, ": the function returned ", dtype_name(o.dtype()), " for f64 inputs");
        if (o.defined() && o.requires_grad()) {
            roots.push_back(o);
            seeds.push_back(constant(v.back()));
        }
    }
    for (std::size_t i = 0; i < vars.size(); ++i)
        if (diff[i]) wrt.push_back(vars[i]);
    std::vector<Variable> g(wrt.size());
    if (!roots.empty()) g = grad(roots, wrt, seeds);

    auto L = [&](const std::vector<Tensor>& x) {
        const std::vector<Variable> o = F(make_vars(x, diff));
        double s = 0;
        for (std::size_t k = 0; k < o.size(); ++k)
            if (o[k].defined() && v[k].defined()) s += dot(o[k].value(), v[k]);
        return s;
    };

    CheckReport rep;
    std::size_t gi = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (!diff[i]) continue;
        const Tensor gt = g[gi].defined() ? g[gi].value() : Tensor::zeros(inputs[i].shape(), DType::f64);
        ++gi;
        const std::vector<double> ga = gt.values();
        const std::int64_t n = inputs[i].numel();
        const std::vector<std::int64_t> elems = pick_elements(n, opt.max_elements, rng);
        CheckRow row{check, name_of(opt, i), static_cast<std::int64_t>(elems.size()), n, {}, 0, 0, 0, 0, 0, true, ""};
        double worst = -1;
        std::vector<Tensor> x = inputs;
        x[i] = inputs[i].clone();
        double* p = x[i].data<double>();
        for (std::int64_t e : elems) {
            const double orig = p[e];
            p[e] = orig + opt.eps;
            const double lp = L(x);
            p[e] = orig - opt.eps;
            const double lm = L(x);
            p[e] = orig;
            const double num = (lp - lm) / (2 * opt.eps), ana = ga[static_cast<std::size_t>(e)];
            const double err = std::fabs(ana - num), tol = opt.atol + opt.rtol * std::fabs(num);
            const double score = std::isnan(err) ? INFINITY : err / tol;
            if (score > worst) {
                worst = score;
                row.index = unravel_index(e, inputs[i].shape());
                row.a = ana;
                row.b = num;
                row.abs_err = err;
                row.rel_err = relative(err, num);
                row.tol = tol;
                row.ok = score <= 1;
            }
        }
        rep.ok = rep.ok && row.ok;
        rep.rows.push_back(row);
    }
    return rep;
}

std::string fmt(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", v);
    return b;
}

// f(a·x) = a·f(x) and f(x+y) = f(x) + f(y) for input k, in f64 on random x, y and a < 0
// (a negative a also catches positively homogeneous maps such as relu). One row: the worse
// of the two comparisons, element-wise, tolerance 64·ε·√n·(largest magnitude involved).
CheckRow check_linearity(const Function& f, const std::vector<Tensor>& inputs, int k, const CheckOptions& opt) {
    std::mt19937_64 rng(opt.seed + 13);
    const std::size_t kk = static_cast<std::size_t>(k);
    std::vector<bool> diff(inputs.size(), false);
    std::vector<Tensor> base = inputs;
    for (std::size_t i = 0; i < base.size(); ++i)
        if (is_float(base[i].dtype())) base[i] = base[i].to(DType::f64);
    const Shape xs = inputs[kk].shape();
    const Tensor x = random_normal(xs, rng), y = random_normal(xs, rng);
    const double a = -(0.5 + std::uniform_real_distribution<double>(0.0, 1.5)(rng));
    std::vector<double> ax = x.values(), xy = x.values();
    const std::vector<double> yv = y.values();
    for (double& e : ax) e *= a;
    for (std::size_t i = 0; i < xy.size(); ++i) xy[i] += yv[i];
    DType out_dt = DType::f64;
    Shape ys;
    auto run = [&](const Tensor& at) {
        std::vector<Tensor> in = base;
        in[kk] = at;
        NoGradGuard ng;
        const Variable r = f(make_vars(in, diff));
        out_dt = r.dtype();
        ys = r.shape();
        return r.value().values();
    };
    const std::vector<double> fx = run(x), fy = run(y), fax = run(Tensor::from(xs, ax, DType::f64)),
                              fxy = run(Tensor::from(xs, xy, DType::f64));
    const std::string who = "input " + std::to_string(k) + (name_of(opt, kk) != "input " + std::to_string(k)
                                                               ? " (" + name_of(opt, kk) + ")" : std::string());
    const double eps = std::max(dtype_epsilon(out_dt), dtype_epsilon(DType::f64));
    const double factor = 64 * eps * std::sqrt(static_cast<double>(x.numel() + static_cast<std::int64_t>(fx.size()) + 1));
    CheckRow row{"linearity", name_of(opt, kk), static_cast<std::int64_t>(fx.size()), static_cast<std::int64_t>(fx.size()),
                 {}, 0, 0, 0, 0, 0, true, ""};
    double worst = -1;
    auto compare = [&](const std::vector<double>& lhs, const std::vector<double>& rhs, double scale,
                       const std::string& what) {
        const double tol = factor * scale + 1e-300;
        for (std::size_t i = 0; i < lhs.size(); ++i) {
            const double err = std::fabs(lhs[i] - rhs[i]);
            const double score = std::isnan(err) ? INFINITY : err / tol;
            if (score > worst) {
                worst = score;
                row.index = unravel_index(static_cast<std::int64_t>(i), ys);
                row.a = lhs[i];
                row.b = rhs[i];
                row.abs_err = err;
                row.rel_err = relative(err, rhs[i]);
                row.tol = tol;
                row.ok = score <= 1;
                row.note = row.ok ? "" : "not linear in " + who + ": " + what + " (max diff " + fmt(err) + " at " +
                                             shape_str(row.index) + ", tol " + fmt(tol) + ")";
            }
        }
    };
    auto maxabs = [](const std::vector<double>& v) {
        double m = 0;
        for (double e : v) m = std::max(m, std::fabs(e));
        return m;
    };
    std::vector<double> afx = fx, fx_fy = fx;
    for (double& e : afx) e *= a;
    for (std::size_t i = 0; i < fx_fy.size(); ++i) fx_fy[i] += fy[i];
    if (fax.size() != fx.size() || fxy.size() != fx.size() || fy.size() != fx.size())
        fail("linear_input", "check_adjoint: f's result changes size with the values of ", who);
    compare(fax, afx, std::max(maxabs(fax), maxabs(afx)), "f(a·x) != a·f(x) with a = " + fmt(a));
    compare(fxy, fx_fy, std::max({maxabs(fxy), maxabs(fx), maxabs(fy)}), "f(x+y) != f(x)+f(y)");
    return row;
}

}  // namespace

void CheckReport::add(const CheckReport& other) {
    ok = ok && other.ok;
    rows.insert(rows.end(), other.rows.begin(), other.rows.end());
}

namespace {

// "0.333" or "-" for a relative error against a zero reference.
std::string rel_str(double rel) { return std::isnan(rel) ? "-" : fmt(rel); }

// One failing row in a line: where, the two values, and why.
std::string failure_line(const CheckRow& r) {
    if (!r.note.empty()) return r.check + " " + r.tensor + ": " + r.note;
    std::string s = r.check + " " + r.tensor;
    if (!r.index.empty()) s += " at " + shape_str(r.index);
    return s + ": " + fmt(r.a) + " vs " + fmt(r.b) + " (|err| " + fmt(r.abs_err) + " > tol " + fmt(r.tol) + ", rel " +
           rel_str(r.rel_err) + ")";
}

}  // namespace

std::string CheckReport::summary() const {
    std::size_t failed = 0;
    const CheckRow* first = nullptr;
    for (const CheckRow& r : rows)
        if (!r.ok) ++failed, first = first ? first : &r;
    if (!first) return "all " + std::to_string(rows.size()) + " checks pass";
    return std::to_string(failed) + " of " + std::to_string(rows.size()) + " checks FAIL; first: " + failure_line(*first);
}

std::string CheckReport::table() const {
    std::ostringstream os;
    char line[512];
    os << summary() << "\n";
    std::snprintf(line, sizeof line, "%-13s %-17s %10s %10s %8s %8s\n", "check", "tensor elements", "analytic", "numeric",
                  "|err|", "tol");
    os << line;
    for (const CheckRow& r : rows) {
        // The name and the elements compared ("48/396" when a sample), the name cut to fit.
        char elems[48];
        if (r.checked == r.total) std::snprintf(elems, sizeof elems, " %lld", static_cast<long long>(r.checked));
        else std::snprintf(elems, sizeof elems, " %lld/%lld", static_cast<long long>(r.checked), static_cast<long long>(r.total));
        const std::string tensor = r.tensor.substr(0, 17 - std::min<std::size_t>(17, std::strlen(elems))) + elems;
        std::snprintf(line, sizeof line, "%-13s %-17s %10.4g %10.4g %8.2g %8.2g  %s\n", r.check.c_str(), tensor.c_str(), r.a,
                      r.b, r.abs_err, r.tol, r.ok ? "ok" : "FAIL");
        os << line;
        if (!r.ok) os << "  -> " << (r.note.empty() ? failure_line(r) : r.note) << "\n";
    }
    // ASCII only: test frameworks count bytes when they wrap at 80 columns.
    os << "legend: analytic/numeric = gradcheck, gradgradcheck: the tape's J^T v for a\n"
          "  random v / central differences of <f(x), v> in f64; adjoint: <A x, y> /\n"
          "  <x, A^T y>; linearity: f(a*x) or f(x+y) / a*f(x) or f(x)+f(y); \"<dtype> vs\n"
          "  f64\": the low-precision value / the f64 one. A row passes when |err| <= tol\n"
          "  (atol + rtol*|numeric| for gradcheck); a failing row names its worst\n"
          "  element (largest |err|/tol) and rel = |err|/|numeric| (- when numeric is 0).\n";
    return os.str();
}

std::string CheckReport::failures() const {
    std::ostringstream os;
    for (const CheckRow& r : rows)
        if (!r.ok) os << failure_line(r) << "\n";
    return os.str();
}

CheckReport gradcheck(const Function& f, const std::vector<Tensor>& inputs, const CheckOptions& opt) {
    std::mt19937_64 rng(opt.seed);
    const MultiFunction F = [&](const std::vector<Variable>& x) { return std::vector<Variable>{f(x)}; };
    return check_vjp(F, inputs, opt, "gradcheck", rng);
}

CheckReport gradgradcheck(const Function& f, const std::vector<Tensor>& inputs, const CheckOptions& opt) {
    std::mt19937_64 rng(opt.seed + 0x9e3779b97f4a7c15ull);
    const std::vector<bool> diff = float_mask(inputs);
    std::vector<Tensor> x = inputs;
    for (std::size_t i = 0; i < x.size(); ++i)
        if (diff[i]) x[i] = x[i].to(DType::f64);
    Shape out_shape;
    {
        NoGradGuard ng;
        out_shape = f(make_vars(x, diff)).shape();
    }
    x.push_back(random_normal(out_shape, rng));  // the cotangent v is an input too
    // (x, v) ↦ Jᵀv, recorded (create_graph) so the outer check can differentiate it.
    const MultiFunction F = [&](const std::vector<Variable>& in) {
        const std::vector<Variable> xs(in.begin(), in.end() - 1);
        const Variable y = f(xs);
        std::vector<Variable> wrt;
        for (std::size_t i = 0; i < xs.size(); ++i)
            if (diff[i]) wrt.push_back(xs[i]);
        std::vector<Variable> g = grad({y}, wrt, {in.back()}, true, true);
        for (std::size_t k = 0; k < g.size(); ++k)
            if (!g[k].defined()) g[k] = constant(Tensor::zeros(wrt[k].shape(), DType::f64));
        return g;
    };
    CheckOptions o = opt;
    o.names.resize(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) o.names[i] = name_of(opt, i);
    o.names.push_back("grad_output");
    return check_vjp(F, x, o, "gradgradcheck", rng);
}

CheckReport check_adjoint(const Function& f, const std::vector<Tensor>& inputs, int k, const CheckOptions& opt) {
    if (k < 0 || k >= static_cast<int>(inputs.size()) || !is_float(inputs[static_cast<std::size_t>(k)].dtype()))
        fail("linear_input", "check_adjoint: input ", k, " is not a float input");
    CheckReport rep;
    const CheckRow linear = check_linearity(f, inputs, k, opt);
    if (!linear.ok) {  // the adjoint identity means nothing for a map that is not linear
        rep.ok = false;
        rep.rows.push_back(linear);
        return rep;
    }
    std::mt19937_64 rng(opt.seed + 7);
    std::vector<bool> diff(inputs.size(), false);
    diff[static_cast<std::size_t>(k)] = true;
    const std::vector<Variable> vars = make_vars(inputs, diff);
    const Variable y = f(vars);
    const DType dt = y.dtype();
    const Tensor u = random_normal(y.shape(), rng).to(dt);
    const Tensor& x = inputs[static_cast<std::size_t>(k)];
    Tensor g;
    if (y.requires_grad()) {
        const Variable gv = grad({y}, {vars[static_cast<std::size_t>(k)]}, {constant(u)})[0];
        if (gv.defined()) g = gv.value();
    }
    if (!g.defined()) g = Tensor::zeros(x.shape(), x.dtype());
    const std::vector<double> yv = y.value().values(), uv = u.values(), xv = x.values(), gv = g.values();
    double lhs = 0, rhs = 0, S = 0;
    for (std::size_t i = 0; i < yv.size(); ++i) lhs += yv[i] * uv[i], S += std::fabs(yv[i] * uv[i]);
    for (std::size_t j = 0; j < xv.size(); ++j) rhs += xv[j] * gv[j], S += std::fabs(xv[j] * gv[j]);
    const double eps = std::max(dtype_epsilon(dt), dtype_epsilon(x.dtype()));
    const double tol = 4 * eps * std::sqrt(static_cast<double>(xv.size() + yv.size())) * S + 1e-300;
    CheckRow row{"adjoint", name_of(opt, static_cast<std::size_t>(k)), static_cast<std::int64_t>(xv.size()),
                 static_cast<std::int64_t>(xv.size()), {}, lhs, rhs, std::fabs(lhs - rhs), 0, tol, true, ""};
    row.rel_err = relative(row.abs_err, S);
    row.ok = row.abs_err <= tol;  // NaN fails
    rep.ok = row.ok;
    rep.rows.push_back(row);
    rep.rows.push_back(linear);
    return rep;
}

CheckReport check_precision(const Function& f, const std::vector<Tensor>& inputs, DType dtype,
                            std::int64_t reduction_length, const CheckOptions& opt) {
    if (!is_float(dtype)) fail("dtype", "check_precision: ", dtype_name(dtype), " is not a float dtype");
    std::mt19937_64 rng(opt.seed + 11);
    const std::vector<bool> diff = float_mask(inputs);
    std::vector<Tensor> low = inputs, ref = inputs;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        if (diff[i]) {
            low[i] = inputs[i].to(dtype);
            ref[i] = low[i].to(DType::f64);  // the same values, exactly
        }
    struct Run {
        Tensor y;
        std::vector<Tensor> g;
    };
    Tensor v;
    auto run = [&](const std::vector<Tensor>& in, DType dt) {
        const std::vector<Variable> vars = make_vars(in, diff);
        const Variable y = f(vars);
        if (y.dtype() != dt) fail("dtype", "check_precision: the function returned ", dtype_name(y.dtype()), " for ", dtype_name(dt), " inputs");
        if (!v.defined()) v = random_normal(y.shape(), rng).to(dtype).to(DType::f64);
        Run r{y.value(), {}};
        std::vector<Variable> wrt;
        for (std::size_t i = 0; i < vars.size(); ++i)
            if (diff[i]) wrt.push_back(vars[i]);
        std::vector<Variable> g(wrt.size());
        if (y.requires_grad()) g = grad({y}, wrt, {constant(v.to(dt))});
        for (std::size_t k = 0; k < g.size(); ++k)
            r.g.push_back(g[k].defined() ? g[k].value() : Tensor::zeros(wrt[k].shape(), dt));
        return r;
    };
    const Run lo = run(low, dtype), hi = run(ref, DType::f64);
    const double eps = dtype_epsilon(dtype), eps_acc = dtype_epsilon(compute_dtype(dtype));
    const double factor = opt.roundings * eps +
                          4 * eps_acc * std::sqrt(static_cast<double>(std::max<std::int64_t>(1, reduction_length)));
    const std::string check = std::string(dtype_name(dtype)) + " vs f64";
    CheckReport rep;
    auto compare = [&](const Tensor& a, const Tensor& b, const std::string& what) {
        const std::vector<double> x = a.values(), y = b.values();
        double scale = 0;
        for (double e : y) scale = std::max(scale, std::fabs(e));
        CheckRow row{check, what, static_cast<std::int64_t>(x.size()), static_cast<std::int64_t>(x.size()), {}, 0, 0, 0, 0,
                     factor * scale, true, ""};
        double worst = -1;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double err = std::fabs(x[i] - y[i]);
            const double score = std::isnan(err) ? INFINITY : err;
            if (score > worst) {
                worst = score;
                row.index = unravel_index(static_cast<std::int64_t>(i), a.shape());
                row.a = x[i];
                row.b = y[i];
                row.abs_err = err;
                row.rel_err = relative(err, y[i]);
            }
        }
        row.ok = !(worst > row.tol);
        rep.ok = rep.ok && row.ok;
        rep.rows.push_back(row);
    };
    compare(lo.y, hi.y, "output");
    std::size_t k = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        if (diff[i]) compare(lo.g[k], hi.g[k], "grad " + name_of(opt, i)), ++k;
    return rep;
}

}  // namespace tg::ag
