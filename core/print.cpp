// operator<< for Tensor: PyTorch-like text (see tapegrad/core/tensor.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "tapegrad/core/tensor.hpp"

namespace tg {

namespace {

constexpr std::int64_t kThreshold = 1000;  // more elements than this: summarise
constexpr std::int64_t kEdge = 3;          // entries shown at each end of a summarised axis

// How every element of one tensor is written, decided once from the values shown.
struct Format {
    bool boolean = false;  // b8: "True" / "False", as PyTorch prints them
    bool integer_dtype = false;
    bool integral = false;    // float values that are all whole numbers: "1."
    bool scientific = false;  // "1.2346e-05"
    int width = 0;

    std::string operator()(double v) const {
        char buf[64];
        if (boolean) std::snprintf(buf, sizeof buf, "%s", v != 0 ? "True" : "False");
        else if (integer_dtype) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
        else if (std::isnan(v)) std::snprintf(buf, sizeof buf, "nan");
        else if (std::isinf(v)) std::snprintf(buf, sizeof buf, v < 0 ? "-inf" : "inf");
        else if (integral) std::snprintf(buf, sizeof buf, "%.0f.", v);
        else if (scientific) std::snprintf(buf, sizeof buf, "%.4e", v);
        else std::snprintf(buf, sizeof buf, "%.4f", v);
        return buf;
    }
};

Format choose_format(DType dtype, const std::vector<double>& shown) {
    Format f;
    f.boolean = dtype == DType::b8;
    f.integer_dtype = !is_float(dtype);
    if (!f.integer_dtype) {
        f.integral = true;
        double lo = INFINITY, hi = 0;
        for (double v : shown) {
            if (!std::isfinite(v)) continue;
            if (v != std::nearbyint(v)) f.integral = false;
            const double a = std::fabs(v);
            hi = std::max(hi, a);
            if (a > 0) lo = std::min(lo, a);
        }
        if (f.integral && hi >= 1e16) f.integral = false;
        if (!f.integral && hi > 0) f.scientific = hi >= 1e8 || lo < 1e-4 || hi / lo > 1e3;
    }
    for (double v : shown) f.width = std::max(f.width, static_cast<int>(f(v).size()));
    return f;
}

// The indices shown along an axis of size n: all, or the first and last kEdge (-1 marks "...").
std::vector<std::int64_t> shown_indices(std::int64_t n, bool summarise) {
    std::vector<std::int64_t> idx;
    if (summarise && n > 2 * kEdge) {
        for (std::int64_t i = 0; i < kEdge; ++i) idx.push_back(i);
        idx.push_back(-1);
        for (std::int64_t i = n - kEdge; i < n; ++i) idx.push_back(i);
    } else {
        for (std::int64_t i = 0; i < n; ++i) idx.push_back(i);
    }
    return idx;
}

struct Printer {
    const Shape& shape;
    std::vector<std::vector<std::int64_t>> axes;  // shown indices per axis
    std::vector<double> values;                   // the shown values, in C order of the shown indices
    Format format;
    std::size_t next = 0;
    int indent = 0;  // column of the outermost '['

    void print(std::ostream& os, int axis) {
        const int nd = static_cast<int>(shape.size());
        os << '[';
        const std::vector<std::int64_t>& idx = axes[static_cast<std::size_t>(axis)];
        for (std::size_t k = 0; k < idx.size(); ++k) {
            if (k > 0) {
                os << ',';
                if (axis == nd - 1) os << ' ';
                else os << std::string(static_cast<std::size_t>(nd - 1 - axis), '\n')
                        << std::string(static_cast<std::size_t>(indent + axis + 1), ' ');
            }
            if (idx[k] < 0) os << "...";
            else if (axis == nd - 1) {
                const std::string s = format(values[next++]);
                os << std::string(static_cast<std::size_t>(format.width) - s.size(), ' ') << s;
            } else print(os, axis + 1);
        }
        os << ']';
    }
};

// Gathers the values at the shown indices (a cartesian product) in C order.
void gather(const Tensor& t, const std::vector<std::vector<std::int64_t>>& axes, int axis, std::vector<double>& out) {
    if (axis == t.ndim()) {
        out.push_back(t.item());
        return;
    }
    for (std::int64_t i : axes[static_cast<std::size_t>(axis)])
        if (i >= 0) gather(t.slice(axis, i, i + 1), axes, axis + 1, out);
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
    if (!t.defined()) return os << "tensor(undefined)";
    const Shape& shape = t.shape();
    const std::int64_t n = t.numel();
    const std::string tail = std::string("shape=") + shape_str(shape) + ", dtype=" + dtype_name(t.dtype()) + ")";
    if (n == 0) return os << "tensor([], " << tail;
    if (shape.empty()) {
        const std::vector<double> v = t.values();
        return os << "tensor(" << choose_format(t.dtype(), v)(v[0]) << ", " << tail;
    }
    const bool summarise = n > kThreshold;
    Printer p{shape, {}, {}, {}, 0, static_cast<int>(std::string("tensor(").size())};
    for (std::int64_t d : shape) p.axes.push_back(shown_indices(d, summarise));
    if (summarise) gather(t, p.axes, 0, p.values);
    else p.values = t.values();
    p.format = choose_format(t.dtype(), p.values);
    os << "tensor(";
    p.print(os, 0);
    return os << ", " << tail;
}

std::string to_string(const Tensor& t) {
    std::ostringstream os;
    os << t;
    return os.str();
}

std::ostream& operator<<(std::ostream& os, DType dtype) { return os << dtype_name(dtype); }

}  // namespace tg
