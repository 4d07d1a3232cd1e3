// The tensor value type: a shape, element strides and a dtype over shared storage.
// Copies share storage (like a handle); views (reshape, permute, slice) are free when the
// layout allows, and `contiguous()` materialises a strided view. Kernels want contiguous
// row-major buffers, so everything that reaches a kernel goes through `contiguous()`.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "tapegrad/core/dtype.hpp"
#include "tapegrad/core/error.hpp"

namespace tg {

using Shape = std::vector<std::int64_t>;

// Returns a storage block to the allocator it came from (tapegrad/core/workspace.hpp).
struct StorageFree {
    std::size_t cap = 0;
    void operator()(std::byte* p) const noexcept;
};

// Bytes (64-byte aligned, uninitialised) plus a version counter that in-place writers bump
// (autograd checks it).
struct Storage {
    explicit Storage(std::size_t nbytes);
    std::unique_ptr<std::byte[], StorageFree> bytes;
    std::size_t nbytes = 0;
    std::uint64_t version = 0;
};

// Product of the dims, failing with `key` on a negative dim or int64 overflow.
std::int64_t shape_numel(const Shape& shape, const std::string& key = "shape");

// The one default dtype of every factory: f32 (pass DType::f64 for gradient checks).
inline constexpr DType kDefaultDType = DType::f32;

class Tensor {
public:
    // Undefined: defined() is false, and every other accessor (shape, numel, values, data,
    // to, reshape, ...) throws an Error (key "tensor") saying that the tensor is undefined.
    Tensor() = default;

    // The free functions of tapegrad/core/factories.hpp (tg::zeros, tg::full, tg::randn, ...) are
    // the everyday spelling; these stay for code that names the class.
    static Tensor empty(const Shape& shape, DType dtype = kDefaultDType);
    static Tensor zeros(const Shape& shape, DType dtype = kDefaultDType);
    static Tensor full(const Shape& shape, double value, DType dtype = kDefaultDType);
    // Values given in C order as doubles, stored as `dtype` (rounded once).
    static Tensor from(const Shape& shape, const std::vector<double>& values, DType dtype = kDefaultDType);

    bool defined() const { return storage_ != nullptr; }
    const Shape& shape() const { check_defined("shape"); return shape_; }
    const Shape& strides() const { check_defined("strides"); return strides_; }
    int ndim() const { check_defined("ndim"); return static_cast<int>(shape_.size()); }
    std::int64_t dim(int axis) const;
    std::int64_t numel() const;
    DType dtype() const { check_defined("dtype"); return dtype_; }
    bool is_contiguous() const;

    // Typed pointer to the first element; T must match the dtype (std::uint16_t for f16/bf16,
    // std::uint8_t for b8).
    template <class T> T* data();
    template <class T> const T* data() const;
    void* raw_data();
    const void* raw_data() const;

    // Converts (always a new buffer unless the dtype is already `dtype`).
    Tensor to(DType dtype) const;
    Tensor contiguous() const;  // shares storage when already contiguous
    Tensor clone() const;       // always a fresh contiguous copy
    // Shape and indexing. Views share the storage (writes through one are seen by the
    // other); the calls marked "copy" make a new buffer. A negative axis counts from the end
    // (-1 is the last), as does a negative index in operator[] and select. One dim of a
    // reshape or view may be -1: it is inferred from the element count.
    Tensor reshape(const Shape& shape) const;  // a view of a contiguous tensor, else a contiguous copy
    Tensor view(const Shape& shape) const;     // view; an error naming the shape and strides when they cannot express it
    Tensor permute(const std::vector<int>& axes) const;                   // view
    Tensor transpose(int d0, int d1) const;                               // view: axes d0 and d1 swapped
    Tensor slice(int axis, std::int64_t begin, std::int64_t end, std::int64_t step = 1) const;  // view
    Tensor select(int axis, std::int64_t index) const;                    // view of one index, the axis removed
    Tensor operator[](std::int64_t index) const { return select(0, index); }  // view: t[i] = t.select(0, i)
    Tensor squeeze() const;                                               // view: every size-1 axis removed
    Tensor squeeze(int axis) const;                                       // view: that axis removed if its size is 1
    Tensor unsqueeze(int axis) const;                                     // view: a size-1 axis inserted at `axis` (in [-ndim-1, ndim])
    Tensor flatten(int start = 0, int end = -1) const;                    // axes start..end merged, as reshape
    // Writes src's values (the same shape; converted to this dtype) into this tensor's
    // elements through its strides, so a view writes into its base; bumps the version.
    void copy_(const Tensor& src);
    // One element by its multi-index (negative entries count from the end).
    double at(const Shape& index) const;
    void set(const Shape& index, double value);  // writes (rounded to the dtype) and bumps the version

    // Element values as doubles in C order (for tests, I/O and small glue code).
    std::vector<double> values() const;
    double item() const;  // the single element of a one-element tensor

    // In-place writers call this so saved tensors can detect the change.
    void bump_version();
    std::uint64_t version() const;
    const void* storage_id() const { return storage_.get(); }

private:
    // Throws "Tensor::<what>: the tensor is undefined ..." when !defined().
    void check_defined(const char* what) const {
        if (!storage_) undefined_error(what);
    }
    [[noreturn]] static void undefined_error(const char* what);

    std::shared_ptr<Storage> storage_;
    std::int64_t offset_ = 0;  // in elements
    Shape shape_, strides_;
    DType dtype_ = DType::f32;
};

// An axis of a rank-`ndim` tensor, negative counting from the end, as 0..ndim-1; the error
// (key "axis") names `op`, the axis and the valid range.
int normalize_axis(int axis, int ndim, const char* op);

// Row-major strides of a shape, in elements.
Shape contiguous_strides(const Shape& shape);

// Calls f(k, ia, ib) for every element k of shape `out` in C order, with the matching
// element offsets of two strided tensors (strides sa, sb in elements; 0 on a broadcast
// axis): the one odometer over shapes of the library. The innermost axis runs as one loop,
// its unit and zero strides spelled out so that the compiler sees them (and vectorises a
// plain f): the odometer steps once a row.
template <class F>
void for_each_broadcast(const Shape& out, const Shape& sa, const Shape& sb, F&& f) {
    const std::int64_t n = shape_numel(out);
    const int nd = static_cast<int>(out.size());
    if (n == 0) return;
    if (nd == 0) return void(f(std::int64_t{0}, std::int64_t{0}, std::int64_t{0}));
    const std::size_t L = static_cast<std::size_t>(nd - 1);
    const std::int64_t len = out[L], la = sa[L], lb = sb[L];
    std::vector<std::int64_t> idx(L, 0);
    std::int64_t ia = 0, ib = 0;
    for (std::int64_t k = 0; k < n; k += len) {
        if (la == 1 && lb == 1)
            for (std::int64_t j = 0; j < len; ++j) f(k + j, ia + j, ib + j);
        else if (la == 1 && lb == 0)
            for (std::int64_t j = 0; j < len; ++j) f(k + j, ia + j, ib);
        else if (la == 0 && lb == 1)
            for (std::int64_t j = 0; j < len; ++j) f(k + j, ia, ib + j);
        else
            for (std::int64_t j = 0; j < len; ++j) f(k + j, ia + j * la, ib + j * lb);
        for (std::size_t a = L; a-- > 0;) {
            ia += sa[a];
            ib += sb[a];
            if (++idx[a] < out[a]) break;
            ia -= sa[a] * out[a];
            ib -= sb[a] * out[a];
            idx[a] = 0;
        }
    }
}

// f(E{}) with E the unsigned integer as wide as an element (bytes 1, 2, 4 or 8): copies,
// selects and gathers move elements as such integers, bit for bit, never byte by byte.
template <class F>
decltype(auto) with_element_bytes(std::size_t bytes, F&& f) {
    switch (bytes) {
        case 1: return f(std::uint8_t{});
        case 2: return f(std::uint16_t{});
        case 4: return f(std::uint32_t{});
        default: return f(std::uint64_t{});
    }
}

// The multi-index of element `flat` (C order) of a tensor of this shape.
Shape unravel_index(std::int64_t flat, const Shape& shape);

// PyTorch-like printing (core/print.cpp), e.g. for a [2, 3] f32 tensor
//   tensor([[1., 2., 3.],
//           [4., 5., 6.]], shape=[2, 3], dtype=f32)
// Floats: integral values as "1.", otherwise 4 decimals, fixed or (for very large, very
// small or widely spread values) scientific; all elements padded to one width. A tensor of
// more than 1000 elements shows the first and last 3 entries of each axis around "...".
// An undefined tensor prints as "tensor(undefined)". (The operator<< for Shape is in
// tapegrad/core/error.hpp.)
std::ostream& operator<<(std::ostream& os, const Tensor& t);
// A dtype prints as its name ("f32", "bool", ...).
std::ostream& operator<<(std::ostream& os, DType dtype);
// The same text as a string.
std::string to_string(const Tensor& t);

}  // namespace tg
