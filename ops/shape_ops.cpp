#include "tapegrad/ops/shape_ops.hpp"

#include <cstring>

namespace tg {

namespace {

// [outer, n, inner] around `axis`.
void split(const Shape& s, int axis, std::int64_t& outer, std::int64_t& inner) {
    outer = inner = 1;
    for (int a = 0; a < axis; ++a) outer *= s[static_cast<std::size_t>(a)];
    for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < s.size(); ++a) inner *= s[a];
}

}  // namespace

Tensor cat(const std::vector<Tensor>& parts, int axis) {
    if (parts.empty()) fail("inputs", "cat: no tensors to join");
    const Shape& s0 = parts[0].shape();
    const int nd = static_cast<int>(s0.size());
    const int ax = axis < 0 ? axis + nd : axis;
    if (ax < 0 || ax >= nd) fail("axis", "cat: axis ", axis, " out of range for rank ", nd);
    Shape out_shape = s0;
    out_shape[static_cast<std::size_t>(ax)] = 0;
    for (std::size_t p = 0; p < parts.size(); ++p) {
        const Tensor& t = parts[p];
        if (!t.defined()) fail("inputs", "cat: part ", p, " is undefined");
        if (t.dtype() != parts[0].dtype())
            fail("dtype", "cat: part ", p, " has dtype ", dtype_name(t.dtype()), ", part 0 has ", dtype_name(parts[0].dtype()));
        bool ok = t.ndim() == nd;
        for (int a = 0; ok && a < nd; ++a)
            if (a != ax && t.shape()[static_cast<std::size_t>(a)] != s0[static_cast<std::size_t>(a)]) ok = false;
        if (!ok)
            fail("shape", "cat: part ", p, " has shape ", shape_str(t.shape()), ", part 0 has ", shape_str(s0),
                 " (only axis ", ax, " may differ)");
        out_shape[static_cast<std::size_t>(ax)] += t.shape()[static_cast<std::size_t>(ax)];
    }
    Tensor out = Tensor::empty(out_shape, parts[0].dtype());
    const std::int64_t es = static_cast<std::int64_t>(dtype_size(out.dtype()));
    std::int64_t outer, inner;
    split(out_shape, ax, outer, inner);
    const std::int64_t row = out_shape[static_cast<std::size_t>(ax)] * inner * es;
    std::byte* po = static_cast<std::byte*>(out.raw_data());
    std::int64_t at = 0;
    for (const Tensor& t : parts) {
        const Tensor c = t.contiguous();
        const std::int64_t chunk = t.shape()[static_cast<std::size_t>(ax)] * inner * es;
        const std::byte* pc = static_cast<const std::byte*>(c.raw_data());
        for (std::int64_t o = 0; o < outer && chunk > 0; ++o)
            std::memcpy(po + o * row + at, pc + o * chunk, static_cast<std::size_t>(chunk));
        at += chunk;
    }
    return out;
}

Tensor slice_scatter(const Tensor& src, const Shape& shape, int axis, std::int64_t begin, std::int64_t step) {
    const int nd = static_cast<int>(shape.size());
    const int ax = axis < 0 ? axis + nd : axis;
    if (ax < 0 || ax >= nd || src.ndim() != nd) fail("axis", "slice_scatter: axis ", axis, " or rank does not fit ", shape_str(shape));
    const std::int64_t m = src.shape()[static_cast<std::size_t>(ax)], n = shape[static_cast<std::size_t>(ax)];
    for (int a = 0; a < nd; ++a)
        if (a != ax && src.shape()[static_cast<std::size_t>(a)] != shape[static_cast<std::size_t>(a)])
            fail("shape", "slice_scatter: source ", shape_str(src.shape()), " does not fit ", shape_str(shape));
    if (step < 1 || begin < 0 || (m > 0 && begin + (m - 1) * step >= n))
        fail("range", "slice_scatter: ", m, " rows from ", begin, " step ", step, " do not fit an axis of ", n);
    Tensor out = Tensor::zeros(shape, src.dtype());
    const Tensor c = src.contiguous();
    const std::int64_t es = static_cast<std::int64_t>(dtype_size(src.dtype()));
    std::int64_t outer, inner;
    split(shape, ax, outer, inner);
    const std::byte* ps = static_cast<const std::byte*>(c.raw_data());
    std::byte* po = static_cast<std::byte*>(out.raw_data());
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t j = 0; j < m; ++j)
            std::memcpy(po + ((o * n + begin + j * step) * inner) * es, ps + ((o * m + j) * inner) * es,
                        static_cast<std::size_t>(inner * es));
    return out;
}

}  // namespace tg
