#include "tapegrad/core/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <numeric>
#include <type_traits>

#include "tapegrad/core/convert.hpp"
#include "tapegrad/core/transpose.hpp"
#include "tapegrad/core/workspace.hpp"

namespace tg {

Storage::Storage(std::size_t n) : nbytes(n) {
    std::size_t cap = 0;
    std::byte* p = static_cast<std::byte*>(detail::storage_alloc(n, cap));
    bytes = std::unique_ptr<std::byte[], StorageFree>(p, StorageFree{cap});
}

void StorageFree::operator()(std::byte* p) const noexcept { detail::storage_free(p, cap); }

std::int64_t shape_numel(const Shape& shape, const std::string& key) {
    // The product of the non-zero dimensions must fit too: strides are formed from it, and
    // a zero-size shape such as [0, 2^32, 2^32] would overflow them.
    std::int64_t n = 1, strides = 1;
    for (std::int64_t d : shape) {
        if (d < 0) fail(key, key, ": negative dimension ", d, " in shape ", shape_str(shape));
        if (__builtin_mul_overflow(strides, std::max<std::int64_t>(d, 1), &strides))
            fail(key, key, ": shape ", shape_str(shape), " is too large (the product of its dimensions overflows int64)");
        n *= d;
    }
    return n;
}

Shape unravel_index(std::int64_t flat, const Shape& shape) {
    Shape idx(shape.size());
    for (std::size_t a = shape.size(); a-- > 0;) {
        idx[a] = shape[a] == 0 ? 0 : flat % shape[a];
        flat = shape[a] == 0 ? 0 : flat / shape[a];
    }
    return idx;
}

Shape contiguous_strides(const Shape& shape) {
    shape_numel(shape);  // every stride must fit int64, zero-size shapes included
    Shape s(shape.size());
    std::int64_t acc = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
        s[i] = acc;
        acc *= std::max<std::int64_t>(shape[i], 1);
    }
    return s;
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
    const std::int64_t n = shape_numel(shape);
    const std::int64_t bytes = checked_mul(n, static_cast<std::int64_t>(dtype_size(dtype)), "shape");
    Tensor t;
    t.storage_ = std::make_shared<Storage>(static_cast<std::size_t>(bytes));
    t.shape_ = shape;
    t.strides_ = contiguous_strides(shape);
    t.dtype_ = dtype;
    return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
    Tensor t = empty(shape, dtype);
    std::fill_n(t.storage_->bytes.get(), t.storage_->nbytes, std::byte{0});
    return t;
}

namespace {

// Calls f(ptr) with a pointer of the C++ type that stores `dtype`.
template <class F>
decltype(auto) visit_ptr(DType dtype, void* p, F&& f) {
    switch (dtype) {
        case DType::f64: return f(static_cast<double*>(p));
        case DType::f32: return f(static_cast<float*>(p));
        case DType::i32: return f(static_cast<std::int32_t*>(p));
        case DType::i64: return f(static_cast<std::int64_t*>(p));
        case DType::b8: return f(static_cast<std::uint8_t*>(p));
        default: return f(static_cast<std::uint16_t*>(p));
    }
}

double load(DType t, const std::byte* p) {
    switch (t) {
        case DType::f64: { double v; std::memcpy(&v, p, 8); return v; }
        case DType::f32: { float v; std::memcpy(&v, p, 4); return v; }
        case DType::f16: { std::uint16_t v; std::memcpy(&v, p, 2); return f16_to_f32(v); }
        case DType::bf16: { std::uint16_t v; std::memcpy(&v, p, 2); return bf16_to_f32(v); }
        case DType::i32: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
        case DType::i64: { std::int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
        case DType::b8: return *p != std::byte{0} ? 1.0 : 0.0;
    }
    return 0;
}

void store(DType t, std::byte* p, double v) {
    switch (t) {
        case DType::f64: std::memcpy(p, &v, 8); break;
        case DType::f32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
        case DType::f16: { std::uint16_t h = f64_to_f16(v); std::memcpy(p, &h, 2); break; }
        case DType::bf16: { std::uint16_t h = f64_to_bf16(v); std::memcpy(p, &h, 2); break; }
        case DType::i32: { std::int32_t i = static_cast<std::int32_t>(v); std::memcpy(p, &i, 4); break; }
        case DType::i64: { std::int64_t i = static_cast<std::int64_t>(v); std::memcpy(p, &i, 8); break; }
        case DType::b8: *p = v != 0 ? std::byte{1} : std::byte{0}; break;  // NaN != 0: true
    }
}

// Walks every element of a strided tensor in C order, calling f(element offset).
template <class F>
void for_each_offset(const Shape& shape, const Shape& strides, std::int64_t offset, F&& f) {
    const int nd = static_cast<int>(shape.size());
    const std::int64_t n = shape_numel(shape);
    if (n == 0) return;
    std::vector<std::int64_t> idx(nd, 0);
    std::int64_t off = offset;
    for (std::int64_t k = 0; k < n; ++k) {
        f(off);
        for (int a = nd - 1; a >= 0; --a) {
            if (++idx[a] < shape[a]) { off += strides[a]; break; }
            off -= strides[a] * (shape[a] - 1);
            idx[a] = 0;
        }
    }
}

}  // namespace

Tensor Tensor::from(const Shape& shape, const std::vector<double>& values, DType dtype) {
    Tensor t = empty(shape, dtype);
    if (static_cast<std::int64_t>(values.size()) != t.numel())
        fail("values", "Tensor::from: ", values.size(), " values for shape ", shape_str(shape), " (", t.numel(),
             " elements)");
    const std::size_t es = dtype_size(dtype);
    for (std::size_t i = 0; i < values.size(); ++i) store(dtype, t.storage_->bytes.get() + i * es, values[i]);
    return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
    return from(shape, std::vector<double>(static_cast<std::size_t>(shape_numel(shape)), value), dtype);
}

void Tensor::undefined_error(const char* what) {
    fail("tensor", "Tensor::", what,
         ": the tensor is undefined (a default-constructed Tensor; make one with tg::zeros, tg::randn, Tensor::from, ...)");
}

std::int64_t Tensor::dim(int axis) const {
    check_defined("dim");
    const int nd = ndim();
    if (axis < -nd || axis >= nd) fail("axis", "Tensor::dim: axis ", axis, " out of range for shape ", shape_str(shape_), " (valid: ", -nd, "..", nd - 1, ")");
    return shape_[static_cast<std::size_t>(axis < 0 ? axis + nd : axis)];
}

std::int64_t Tensor::numel() const {
    check_defined("numel");
    return shape_numel(shape_);
}

bool Tensor::is_contiguous() const {
    check_defined("is_contiguous");
    std::int64_t acc = 1;
    for (std::size_t i = shape_.size(); i-- > 0;) {
        if (shape_[i] != 1 && strides_[i] != acc) return numel() == 0;
        acc *= shape_[i];
    }
    return true;
}

template <class T>
static bool matches(DType d) {
    if constexpr (std::is_same_v<T, double>) return d == DType::f64;
    else if constexpr (std::is_same_v<T, float>) return d == DType::f32;
    else if constexpr (std::is_same_v<T, std::uint16_t>) return d == DType::f16 || d == DType::bf16;
    else if constexpr (std::is_same_v<T, std::int32_t>) return d == DType::i32;
    else if constexpr (std::is_same_v<T, std::int64_t>) return d == DType::i64;
    else if constexpr (std::is_same_v<T, std::uint8_t>) return d == DType::b8;
    else return false;
}

template <class T>
T* Tensor::data() {
    check_defined("data");
    if (!matches<T>(dtype_)) fail("dtype", "Tensor::data: requested element type does not match dtype ", dtype_name(dtype_), " (tensor ",
                                  shape_str(shape_), ")");
    return reinterpret_cast<T*>(storage_->bytes.get()) + offset_;
}
template <class T>
const T* Tensor::data() const {
    return const_cast<Tensor*>(this)->data<T>();
}
template double* Tensor::data<double>();
template float* Tensor::data<float>();
template std::uint16_t* Tensor::data<std::uint16_t>();
template std::int32_t* Tensor::data<std::int32_t>();
template std::int64_t* Tensor::data<std::int64_t>();
template std::uint8_t* Tensor::data<std::uint8_t>();
template const double* Tensor::data<double>() const;
template const float* Tensor::data<float>() const;
template const std::uint16_t* Tensor::data<std::uint16_t>() const;
template const std::int32_t* Tensor::data<std::int32_t>() const;
template const std::int64_t* Tensor::data<std::int64_t>() const;
template const std::uint8_t* Tensor::data<std::uint8_t>() const;

void* Tensor::raw_data() {
    check_defined("raw_data");
    return storage_->bytes.get() + offset_ * static_cast<std::int64_t>(dtype_size(dtype_));
}
const void* Tensor::raw_data() const { return const_cast<Tensor*>(this)->raw_data(); }

namespace {

// Copies a strided view (shape, strides, element offset) of src into the contiguous dst,
// element type T (chosen by size only: a copy moves bits). Size-1 axes are dropped and
// axes that are contiguous with each other merged; then
//   * an innermost axis of stride 1: one memcpy per row;
//   * an axis of stride 1 elsewhere (a transpose): the plane of that axis and the innermost
//     one by transpose_copy (tapegrad/core/transpose.hpp);
//   * otherwise: element by element.
template <class T>
void strided_copy(const T* src, Shape shape, Shape strides, std::int64_t offset, T* dst) {
    Shape sh, st;  // merged, size-1 axes dropped, outermost first
    for (std::size_t a = 0; a < shape.size(); ++a) {
        if (shape[a] == 1) continue;
        if (!sh.empty() && st.back() == strides[a] * shape[a]) {
            sh.back() *= shape[a];
            st.back() = strides[a];
        } else {
            sh.push_back(shape[a]);
            st.push_back(strides[a]);
        }
    }
    if (sh.empty()) {
        *dst = src[offset];
        return;
    }
    const std::size_t L = sh.size() - 1;
    const std::int64_t n_last = sh[L];
    // k: an axis other than the last with stride 1, if any
    std::size_t k = L;
    for (std::size_t a = 0; a < L; ++a)
        if (st[a] == 1) k = a;
    const Shape dst_st = contiguous_strides(sh);
    // The outer axes: every axis but the last (and but k when tiling).
    Shape outer_sh, outer_st, outer_dst;
    for (std::size_t a = 0; a < L; ++a)
        if (st[L] == 1 || a != k) {
            outer_sh.push_back(sh[a]);
            outer_st.push_back(st[a]);
            outer_dst.push_back(dst_st[a]);
        }
    for_each_broadcast(outer_sh, outer_st, outer_dst, [&](std::int64_t, std::int64_t outer_src, std::int64_t d0) {
        const std::int64_t so = offset + outer_src;
        if (st[L] == 1) {
            std::memcpy(dst + d0, src + so, static_cast<std::size_t>(n_last) * sizeof(T));
        } else if (k != L) {
            transpose_copy(src + so, st[L], n_last, sh[k], dst + d0, dst_st[k]);  // dst[i·dst_st[k] + j] = src[so + j·st[L] + i]
        } else {
            for (std::int64_t j = 0; j < n_last; ++j) dst[d0 + j] = src[so + j * st[L]];
        }
    });
}

}  // namespace

Tensor Tensor::contiguous() const {
    check_defined("contiguous");
    if (is_contiguous()) return *this;
    Tensor out = empty(shape_, dtype_);
    if (out.numel() == 0) return out;
    const std::byte* src = storage_->bytes.get();
    std::byte* dst = out.storage_->bytes.get();
    with_element_bytes(dtype_size(dtype_), [&](auto e) {
        using E = decltype(e);
        strided_copy(reinterpret_cast<const E*>(src), shape_, strides_, offset_, reinterpret_cast<E*>(dst));
    });
    return out;
}

Tensor Tensor::clone() const {
    check_defined("clone");
    Tensor c = contiguous();
    if (c.storage_ != storage_) return c;
    Tensor out = empty(shape_, dtype_);
    std::memcpy(out.storage_->bytes.get(), raw_data(), static_cast<std::size_t>(numel()) * dtype_size(dtype_));
    return out;
}

Tensor Tensor::to(DType dtype) const {
    check_defined("to");
    if (dtype == dtype_) return *this;
    const Tensor src = contiguous();
    Tensor out = empty(shape_, dtype);
    const std::int64_t n = numel();
    const std::byte* s = static_cast<const std::byte*>(src.raw_data());
    std::byte* d = out.storage_->bytes.get();
    // 16-bit <-> f32: the bulk conversions of tapegrad/core/convert.hpp, vectorised and bit for bit
    // f32_to_f16 ... bf16_to_f32. (The generic loop below passes through f64, which quiets a
    // signalling NaN: f16 0x7c01 became 0x7fc02000; now it is 0x7f802000, as f16_to_f32 has
    // it.) f32 <-> f64: plain casts, as load() and store() do them.
    if (dtype_ == DType::f32 || dtype == DType::f32) {
        const float* sf = dtype_ == DType::f32 ? src.data<float>() : nullptr;
        float* df = dtype == DType::f32 ? out.data<float>() : nullptr;
        switch (dtype_ == DType::f32 ? dtype : dtype_) {
            case DType::f16:
                if (sf) f32_to_f16_n(sf, out.data<std::uint16_t>(), n);
                else f16_to_f32_n(src.data<std::uint16_t>(), df, n);
                return out;
            case DType::bf16:
                if (sf) f32_to_bf16_n(sf, out.data<std::uint16_t>(), n);
                else bf16_to_f32_n(src.data<std::uint16_t>(), df, n);
                return out;
            case DType::f64:
                if (sf) {
                    double* dd = out.data<double>();
                    for (std::int64_t i = 0; i < n; ++i) dd[i] = static_cast<double>(sf[i]);
                } else {
                    const double* sd = src.data<double>();
                    for (std::int64_t i = 0; i < n; ++i) df[i] = static_cast<float>(sd[i]);
                }
                return out;
            default: break;
        }
    }
    const std::size_t ss = dtype_size(dtype_), ds = dtype_size(dtype);
    // store() rounds a double once, so f64 -> f16/bf16 is a single correct rounding.
    for (std::int64_t i = 0; i < n; ++i) store(dtype, d + i * ds, load(dtype_, s + i * ss));
    return out;
}

int normalize_axis(int axis, int ndim, const char* op) {
    if (axis < -ndim || axis >= ndim)
        fail("axis", op, ": axis ", axis, " out of range for a tensor of rank ", ndim, " (valid: ", -ndim, "..", ndim - 1, ")");
    return axis < 0 ? axis + ndim : axis;
}

namespace {

// `shape` with a -1 entry replaced by the size that gives `numel` elements; errors name `op`.
Shape infer_shape(const Shape& shape, std::int64_t numel, const Shape& from, const char* op) {
    Shape out = shape;
    int infer = -1;
    std::int64_t known = 1;
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (out[i] == -1 && infer < 0) infer = static_cast<int>(i);
        else if (out[i] < 0) fail("shape", op, ": shape ", shape_str(shape), " has a negative dim other than one -1");
        else known = out[i] == 0 ? 0 : known * out[i];
    }
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            fail("shape", op, ": cannot infer the -1 of ", shape_str(shape), " for ", shape_str(from), " (", numel, " elements)");
        out[static_cast<std::size_t>(infer)] = numel / known;
    }
    if (shape_numel(out, "shape") != numel)
        fail("shape", op, ": cannot view ", shape_str(from), " (", numel, " elements) as ", shape_str(shape));
    return out;
}

// The strides that read a tensor of shape `from` with strides `st` as `to` without a copy,
// or false when no strides can (PyTorch's computeStride): runs of axes of `from` that are
// contiguous with each other may be split and merged freely; nothing may cross a seam.
bool view_strides(const Shape& from, const Shape& st, const Shape& to, Shape& out) {
    out.assign(to.size(), 0);
    if (shape_numel(from) == 0) {
        out = contiguous_strides(to);
        return true;
    }
    std::int64_t view_d = static_cast<std::int64_t>(to.size()) - 1;
    std::int64_t chunk_base_stride = from.empty() ? 1 : st.back();
    std::int64_t tensor_numel = 1, view_numel = 1;
    for (std::int64_t d = static_cast<std::int64_t>(from.size()) - 1; d >= 0; --d) {
        tensor_numel *= from[static_cast<std::size_t>(d)];
        if (d == 0 || (from[static_cast<std::size_t>(d - 1)] != 1 &&
                       st[static_cast<std::size_t>(d - 1)] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || to[static_cast<std::size_t>(view_d)] == 1)) {
                out[static_cast<std::size_t>(view_d)] = view_numel * chunk_base_stride;
                view_numel *= to[static_cast<std::size_t>(view_d)];
                --view_d;
            }
            if (view_numel != tensor_numel) return false;
            if (d > 0) {
                chunk_base_stride = st[static_cast<std::size_t>(d - 1)];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
    check_defined("view");
    const Shape want = infer_shape(shape, numel(), shape_, "view");
    Shape st;
    if (!view_strides(shape_, strides_, want, st))
        fail("shape", "view: a tensor of shape ", shape_str(shape_), " with strides ", shape_str(strides_),
             " cannot be viewed as ", shape_str(want), " without a copy (use reshape, which copies when it must)");
    Tensor t = *this;
    t.shape_ = want;
    t.strides_ = st;
    return t;
}

Tensor Tensor::reshape(const Shape& shape) const {
    check_defined("reshape");
    const Shape want = infer_shape(shape, numel(), shape_, "reshape");
    Tensor t = contiguous();  // shares the storage when already contiguous
    t.shape_ = want;
    t.strides_ = contiguous_strides(want);
    return t;
}

Tensor Tensor::transpose(int d0, int d1) const {
    check_defined("transpose");
    const int nd = ndim();
    const int a = normalize_axis(d0, nd, "transpose"), b = normalize_axis(d1, nd, "transpose");
    Tensor t = *this;
    std::swap(t.shape_[static_cast<std::size_t>(a)], t.shape_[static_cast<std::size_t>(b)]);
    std::swap(t.strides_[static_cast<std::size_t>(a)], t.strides_[static_cast<std::size_t>(b)]);
    return t;
}

Tensor Tensor::select(int axis, std::int64_t index) const {
    check_defined("select");
    const int nd = ndim();
    if (nd == 0) fail("tensor", "select: a 0-d tensor has no axis to index");
    const int a = normalize_axis(axis, nd, "select");
    const std::int64_t n = shape_[static_cast<std::size_t>(a)];
    if (index < -n || index >= n)
        fail("index", "select: index ", index, " out of range for axis ", a, " of size ", n, " (valid: ", -n, "..", n - 1,
             "; tensor ", shape_str(shape_), ")");
    Tensor t = *this;
    t.offset_ += (index < 0 ? index + n : index) * strides_[static_cast<std::size_t>(a)];
    t.shape_.erase(t.shape_.begin() + a);
    t.strides_.erase(t.strides_.begin() + a);
    return t;
}

Tensor Tensor::squeeze() const {
    check_defined("squeeze");
    Tensor t = *this;
    t.shape_.clear();
    t.strides_.clear();
    for (std::size_t i = 0; i < shape_.size(); ++i)
        if (shape_[i] != 1) {
            t.shape_.push_back(shape_[i]);
            t.strides_.push_back(strides_[i]);
        }
    return t;
}

Tensor Tensor::squeeze(int axis) const {
    check_defined("squeeze");
    const int a = normalize_axis(axis, ndim(), "squeeze");
    if (shape_[static_cast<std::size_t>(a)] != 1) return *this;  // as PyTorch: a no-op
    Tensor t = *this;
    t.shape_.erase(t.shape_.begin() + a);
    t.strides_.erase(t.strides_.begin() + a);
    return t;
}

Tensor Tensor::unsqueeze(int axis) const {
    check_defined("unsqueeze");
    const int a = normalize_axis(axis, ndim() + 1, "unsqueeze");
    Tensor t = *this;
    const std::size_t i = static_cast<std::size_t>(a);
    const std::int64_t st = i < shape_.size() ? strides_[i] * shape_[i] : 1;
    t.shape_.insert(t.shape_.begin() + a, 1);
    t.strides_.insert(t.strides_.begin() + a, st);
    return t;
}

Tensor Tensor::flatten(int start, int end) const {
    check_defined("flatten");
    const int nd = ndim();
    if (nd == 0) return reshape({1});
    const int s = normalize_axis(start, nd, "flatten"), e = normalize_axis(end, nd, "flatten");
    if (s > e) fail("axis", "flatten: start axis ", start, " comes after end axis ", end, " (tensor ", shape_str(shape_), ")");
    Shape out(shape_.begin(), shape_.begin() + s);
    std::int64_t merged = 1;
    for (int a = s; a <= e; ++a) merged *= shape_[static_cast<std::size_t>(a)];
    out.push_back(merged);
    out.insert(out.end(), shape_.begin() + e + 1, shape_.end());
    return reshape(out);
}

namespace {

std::int64_t element_offset(const Shape& shape, const Shape& strides, std::int64_t base, const Shape& index, const char* op) {
    if (index.size() != shape.size())
        fail("index", op, ": index ", shape_str(index), " has ", index.size(), " entries for a tensor of shape ", shape_str(shape));
    std::int64_t off = base;
    for (std::size_t a = 0; a < shape.size(); ++a) {
        const std::int64_t n = shape[a], i = index[a];
        if (i < -n || i >= n)
            fail("index", op, ": index ", shape_str(index), " is out of range on axis ", a, " (", i, " for size ", n,
                 "; valid: ", -n, "..", n - 1, ")");
        off += (i < 0 ? i + n : i) * strides[a];
    }
    return off;
}

}  // namespace

void Tensor::copy_(const Tensor& src) {
    check_defined("copy_");
    if (!src.defined()) fail("input", "copy_: the source tensor is undefined");
    if (src.shape() != shape_)
        fail("shape", "copy_: source shape ", shape_str(src.shape()), " differs from destination ", shape_str(shape_));
    const Tensor s = src.to(dtype_).contiguous();
    const std::int64_t es = static_cast<std::int64_t>(dtype_size(dtype_));
    const std::byte* from = static_cast<const std::byte*>(s.raw_data());
    std::byte* base = storage_->bytes.get();
    if (is_contiguous()) {
        std::memmove(base + offset_ * es, from, static_cast<std::size_t>(numel() * es));
    } else {
        with_element_bytes(static_cast<std::size_t>(es), [&](auto e) {
            using E = decltype(e);
            const E* f = reinterpret_cast<const E*>(from);
            E* b = reinterpret_cast<E*>(base);
            for_each_offset(shape_, strides_, offset_, [&](std::int64_t off) { b[off] = *f++; });
        });
    }
    bump_version();
}

double Tensor::at(const Shape& index) const {
    check_defined("at");
    const std::int64_t off = element_offset(shape_, strides_, offset_, index, "Tensor::at");
    return load(dtype_, storage_->bytes.get() + off * static_cast<std::int64_t>(dtype_size(dtype_)));
}

void Tensor::set(const Shape& index, double value) {
    check_defined("set");
    const std::int64_t off = element_offset(shape_, strides_, offset_, index, "Tensor::set");
    store(dtype_, storage_->bytes.get() + off * static_cast<std::int64_t>(dtype_size(dtype_)), value);
    bump_version();
}

Tensor Tensor::permute(const std::vector<int>& axes) const {
    check_defined("permute");
    const int nd = ndim();
    const auto axes_str = [&] { return shape_str(Shape(axes.begin(), axes.end())); };
    if (static_cast<int>(axes.size()) != nd)
        fail("axes", "permute: axes ", axes_str(), " has ", axes.size(), " entries for a tensor of shape ", shape_str(shape_));
    std::vector<bool> seen(nd, false);
    Tensor t = *this;
    for (int i = 0; i < nd; ++i) {
        const int a = axes[i];
        if (a < 0 || a >= nd || seen[a])
            fail("axes", "permute: axes ", axes_str(), " is not a permutation of 0..", nd - 1, " (tensor ", shape_str(shape_), ")");
        seen[a] = true;
        t.shape_[i] = shape_[a];
        t.strides_[i] = strides_[a];
    }
    return t;
}

Tensor Tensor::slice(int axis, std::int64_t begin, std::int64_t end, std::int64_t step) const {
    check_defined("slice");
    const int nd = ndim();
    const int given = axis;
    if (axis < 0) axis += nd;
    if (axis < 0 || axis >= nd) fail("axis", "slice: axis ", given, " out of range for shape ", shape_str(shape_));
    const std::int64_t n = shape_[axis];
    if (step < 1) fail("step", "slice: step=", step, " must be >= 1 (axis ", axis, " of ", shape_str(shape_), ")");
    if (begin < 0 || end > n || begin > end)
        fail("range", "slice: range [", begin, ", ", end, ") out of bounds for axis ", axis, " of size ", n, " (tensor ",
             shape_str(shape_), ")");
    Tensor t = *this;
    t.offset_ += begin * strides_[axis];
    t.shape_[axis] = end == begin ? 0 : (end - begin - 1) / step + 1;  // no overflow for any step
    t.strides_[axis] *= step;
    return t;
}

std::vector<double> Tensor::values() const {
    check_defined("values");
    std::vector<double> v;
    v.reserve(static_cast<std::size_t>(numel()));
    const std::size_t es = dtype_size(dtype_);
    const std::byte* base = storage_->bytes.get();
    for_each_offset(shape_, strides_, offset_, [&](std::int64_t off) { v.push_back(load(dtype_, base + off * static_cast<std::int64_t>(es))); });
    return v;
}

double Tensor::item() const {
    check_defined("item");
    if (numel() != 1) fail("tensor", "Tensor::item: tensor of shape ", shape_str(shape_), " has ", numel(), " elements, not 1");
    return values()[0];
}

void Tensor::bump_version() {
    check_defined("bump_version");
    ++storage_->version;
}
std::uint64_t Tensor::version() const { return storage_ ? storage_->version : 0; }

}  // namespace tg
