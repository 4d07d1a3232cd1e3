#include "tapegrad/ops/index.hpp"

#include <algorithm>

#include "tapegrad/ops/shape_ops.hpp"

namespace tg {

namespace {

// index as contiguous i64, checked against [0, n) (`what` names it in the errors).
Tensor checked_index(const Tensor& index, std::int64_t n, const char* op, const char* what) {
    if (!index.defined()) fail("index", op, ": the ", what, " is undefined");
    if (index.dtype() != DType::i32 && index.dtype() != DType::i64)
        fail("index", op, ": the ", what, " must be an i32 or i64 tensor, got ", dtype_name(index.dtype()), " ",
             shape_str(index.shape()));
    Tensor ix = index.to(DType::i64).contiguous();
    const std::int64_t* p = ix.data<std::int64_t>();
    for (std::int64_t k = 0, m = ix.numel(); k < m; ++k)
        if (p[k] < 0 || p[k] >= n)
            fail("index", op, ": ", what, " value ", p[k], " at position ", shape_str(unravel_index(k, ix.shape())),
                 " is out of range (valid: 0..", n - 1, ")");
    return ix;
}

void need_defined(const Tensor& t, const char* op, const char* which) {
    if (!t.defined()) fail("input", op, ": the ", which, " is undefined");
}

// [outer, n, inner] around `axis`.
void around(const Shape& s, int axis, std::int64_t& outer, std::int64_t& inner) {
    outer = inner = 1;
    for (int a = 0; a < axis; ++a) outer *= s[static_cast<std::size_t>(a)];
    for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < s.size(); ++a) inner *= s[a];
}

// Calls f(k, off) for every position k (C order) of `shape`, with off the offset of the same
// multi-index in a contiguous tensor of shape `into` (every dim of shape <= into's) with
// axis `skip` left out of the offset (−1: none).
template <class F>
void walk(const Shape& shape, const Shape& into, int skip, F&& f) {
    Shape st = contiguous_strides(into);
    if (skip >= 0 && skip < static_cast<int>(st.size())) st[static_cast<std::size_t>(skip)] = 0;
    const Shape none(shape.size(), 0);
    for_each_broadcast(shape, st, none, [&](std::int64_t k, std::int64_t off, std::int64_t) { f(k, off); });
}

void check_gather_shapes(const Tensor& t, int ax, const Tensor& index, const Tensor* src, const char* op) {
    if (index.ndim() != t.ndim())
        fail("index", op, ": the index ", shape_str(index.shape()), " must have the input's rank ", t.ndim(), " (input ",
             shape_str(t.shape()), ")");
    for (int a = 0; a < t.ndim(); ++a) {
        const std::size_t u = static_cast<std::size_t>(a);
        if (a != ax && index.shape()[u] > t.shape()[u])
            fail("index", op, ": the index ", shape_str(index.shape()), " is larger than the input ", shape_str(t.shape()),
                 " on axis ", a, " (only axis ", ax, " may be)");
        if (src && index.shape()[u] > src->shape()[u])
            fail("index", op, ": the index ", shape_str(index.shape()), " is larger than the source ",
                 shape_str(src->shape()), " on axis ", a);
    }
}

}  // namespace

Tensor index_select(const Tensor& t, int axis, const Tensor& index) {
    need_defined(t, "index_select", "input");
    const int ax = normalize_axis(axis, t.ndim(), "index_select");
    if (index.defined() && index.ndim() > 1)
        fail("index", "index_select: the index must be 1-D, got ", shape_str(index.shape()));
    const std::int64_t n = t.shape()[static_cast<std::size_t>(ax)];
    const Tensor ix = checked_index(index, n, "index_select", "index");
    const std::int64_t m = ix.numel();
    Shape out_shape = t.shape();
    out_shape[static_cast<std::size_t>(ax)] = m;
    const Tensor X = t.contiguous();
    Tensor out = Tensor::empty(out_shape, t.dtype());
    std::int64_t outer, inner;
    around(t.shape(), ax, outer, inner);
    const std::int64_t* pi = ix.data<std::int64_t>();
    with_element_bytes(dtype_size(t.dtype()), [&](auto e) {
        using E = decltype(e);
        const E* px = static_cast<const E*>(X.raw_data());
        E* po = static_cast<E*>(out.raw_data());
        for (std::int64_t o = 0; o < outer; ++o)
            for (std::int64_t j = 0; j < m; ++j) {
                const E* s = px + (o * n + pi[j]) * inner;
                E* d = po + (o * m + j) * inner;
                if (inner == 1) *d = *s;  // the last axis: an element, not a call to memcpy
                else std::copy_n(s, inner, d);
            }
    });
    return out;
}

Tensor index_add(const Tensor& t, int axis, const Tensor& index, const Tensor& src) {
    need_defined(t, "index_add", "input");
    need_defined(src, "index_add", "source");
    const int ax = normalize_axis(axis, t.ndim(), "index_add");
    if (index.defined() && index.ndim() > 1) fail("index", "index_add: the index must be 1-D, got ", shape_str(index.shape()));
    const std::int64_t n = t.shape()[static_cast<std::size_t>(ax)];
    const Tensor ix = checked_index(index, n, "index_add", "index");
    const std::int64_t m = ix.numel();
    Shape want = t.shape();
    want[static_cast<std::size_t>(ax)] = m;
    if (src.shape() != want)
        fail("shape", "index_add: the source ", shape_str(src.shape()), " must have shape ", shape_str(want),
             " (the input ", shape_str(t.shape()), " with ", m, " indices on axis ", ax, ")");
    const DType at = accumulate_dtype(t.dtype());
    Tensor out = t.to(at).clone();
    const Tensor S = src.to(at).contiguous();
    std::int64_t outer, inner;
    around(t.shape(), ax, outer, inner);
    const std::int64_t* pi = ix.data<std::int64_t>();
    with_compute_type<true>(at, [&](auto tag) {
        using T = decltype(tag);
        T* po = out.data<T>();
        const T* ps = S.data<T>();
        for (std::int64_t o = 0; o < outer; ++o)
            for (std::int64_t j = 0; j < m; ++j) {
                T* d = po + (o * n + pi[j]) * inner;
                const T* s = ps + (o * m + j) * inner;
                for (std::int64_t i = 0; i < inner; ++i) d[i] = static_cast<T>(d[i] + s[i]);
            }
    });
    return out.to(t.dtype());
}

Tensor gather(const Tensor& t, int axis, const Tensor& index) {
    need_defined(t, "gather", "input");
    const int ax = normalize_axis(axis, t.ndim(), "gather");
    if (!index.defined()) fail("index", "gather: the index is undefined");
    check_gather_shapes(t, ax, index, nullptr, "gather");
    const Tensor ix = checked_index(index, t.shape()[static_cast<std::size_t>(ax)], "gather", "index");
    const Tensor X = t.contiguous();
    Tensor out = Tensor::empty(ix.shape(), t.dtype());
    const std::int64_t stride = contiguous_strides(t.shape())[static_cast<std::size_t>(ax)];
    const std::int64_t* pi = ix.data<std::int64_t>();
    with_element_bytes(dtype_size(t.dtype()), [&](auto e) {
        using E = decltype(e);
        const E* px = static_cast<const E*>(X.raw_data());
        E* po = static_cast<E*>(out.raw_data());
        walk(ix.shape(), t.shape(), ax, [&](std::int64_t k, std::int64_t off) { po[k] = px[off + pi[k] * stride]; });
    });
    return out;
}

Tensor scatter_add(const Tensor& t, int axis, const Tensor& index, const Tensor& src) {
    need_defined(t, "scatter_add", "input");
    need_defined(src, "scatter_add", "source");
    const int ax = normalize_axis(axis, t.ndim(), "scatter_add");
    if (!index.defined()) fail("index", "scatter_add: the index is undefined");
    if (src.ndim() != t.ndim())
        fail("shape", "scatter_add: the source ", shape_str(src.shape()), " must have the input's rank ", t.ndim());
    check_gather_shapes(t, ax, index, &src, "scatter_add");
    const Tensor ix = checked_index(index, t.shape()[static_cast<std::size_t>(ax)], "scatter_add", "index");
    const DType at = accumulate_dtype(t.dtype());
    Tensor out = t.to(at).clone();
    const Tensor S = src.to(at).contiguous();
    const std::int64_t stride = contiguous_strides(t.shape())[static_cast<std::size_t>(ax)];
    const std::int64_t* pi = ix.data<std::int64_t>();
    with_compute_type<true>(at, [&](auto tag) {
        using T = decltype(tag);
        T* po = out.data<T>();
        const T* ps = S.data<T>();
        // src's element at the same multi-index as index position k: walk src's offsets too.
        std::vector<std::int64_t> src_off(static_cast<std::size_t>(ix.numel()));
        walk(ix.shape(), src.shape(), -1, [&](std::int64_t k, std::int64_t off) { src_off[static_cast<std::size_t>(k)] = off; });
        walk(ix.shape(), t.shape(), ax, [&](std::int64_t k, std::int64_t off) {
            T& d = po[off + pi[k] * stride];
            d = static_cast<T>(d + ps[src_off[static_cast<std::size_t>(k)]]);
        });
    });
    return out.to(t.dtype());
}

Tensor stack(const std::vector<Tensor>& parts, int axis) {
    if (parts.empty()) fail("inputs", "stack: no tensors to stack");
    std::vector<Tensor> views;
    for (std::size_t p = 0; p < parts.size(); ++p) {
        need_defined(parts[p], "stack", "part");
        if (parts[p].shape() != parts[0].shape())
            fail("shape", "stack: part ", p, " has shape ", shape_str(parts[p].shape()), ", part 0 has ",
                 shape_str(parts[0].shape()), " (all must be equal)");
        views.push_back(parts[p].unsqueeze(normalize_axis(axis, parts[0].ndim() + 1, "stack")));
    }
    return cat(views, axis);
}

}  // namespace tg
