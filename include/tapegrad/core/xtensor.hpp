// Zero-copy interop with xtensor (libxtensor-dev), both ways, header-only.
//
//   tg::Tensor t = tg::Tensor::zeros({2, 3}, tg::DType::f32);
//   auto v = tg::as_xtensor<float>(t);      // an xtensor view of t's buffer: no copy
//   v(1, 2) = 5.f;                          // writes t
//   tg::Tensor u = tg::from_xtensor(xt::linspace<double>(0., 1., 5) * 2.);
//                                           // the expression is evaluated straight into u's storage
//
// The view follows the tensor's strides (a permuted or sliced tensor is viewed in place)
// and shares its storage: keep the tensor alive while the view is used. Element types:
// float (f32), double (f64), std::int32_t (i32), std::int64_t (i64). f16/bf16 tensors
// have no xtensor element type: convert them first (`t.to(DType::f32)`).
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xexpression.hpp>

#include "tapegrad/core/error.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tg {

namespace detail {

template <class T> constexpr DType xtensor_dtype() {
    if constexpr (std::is_same_v<T, float>) return DType::f32;
    else if constexpr (std::is_same_v<T, double>) return DType::f64;
    else if constexpr (std::is_same_v<T, std::int32_t>) return DType::i32;
    else {
        static_assert(std::is_same_v<T, std::int64_t>, "tapegrad tensors hold float, double, int32_t or int64_t");
        return DType::i64;
    }
}

// The adaptor over t's elements: its shape, its strides, and the span of the buffer they reach.
template <class T> void check_viewable(const Tensor& t) {
    if (!t.defined()) fail("tensor", "as_xtensor: the tensor is undefined");
    if (t.dtype() != xtensor_dtype<T>())
        fail("dtype", "as_xtensor: the tensor has dtype ", dtype_name(t.dtype()), ", the view asks for ",
             dtype_name(xtensor_dtype<T>()));
}

template <class Ptr> auto adapt_tensor(Ptr data, const Tensor& t) {
    std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
    std::vector<std::ptrdiff_t> strides(t.strides().begin(), t.strides().end());
    std::size_t span = t.numel() == 0 ? 0 : 1;
    for (std::size_t a = 0; a < shape.size(); ++a) {
        if (strides[a] < 0) fail("strides", "as_xtensor: negative strides ", shape_str(t.strides()), " are not supported");
        if (shape[a] > 0) span += (shape[a] - 1) * static_cast<std::size_t>(strides[a]);
    }
    return xt::adapt(data, span, xt::no_ownership(), shape, strides);
}

}  // namespace detail

// An xtensor expression over t's buffer (no copy); writing through it changes t.
template <class T> auto as_xtensor(Tensor& t) {
    detail::check_viewable<T>(t);
    return detail::adapt_tensor(t.data<T>(), t);
}
template <class T> auto as_xtensor(const Tensor& t) {
    detail::check_viewable<T>(t);
    return detail::adapt_tensor(t.data<T>(), t);
}

// A new contiguous tensor holding the values of an xtensor expression (a container, a view
// or a lazy expression such as `a * 2 + b`), evaluated directly into the tensor's storage.
template <class E> Tensor from_xtensor(const xt::xexpression<E>& expr) {
    const E& e = expr.derived_cast();
    using T = std::decay_t<typename E::value_type>;
    Shape shape;
    for (auto d : e.shape()) shape.push_back(static_cast<std::int64_t>(d));
    Tensor t = Tensor::empty(shape, detail::xtensor_dtype<T>());
    if (t.numel() > 0) {
        auto v = as_xtensor<T>(t);
        v = e;
    }
    return t;
}

}  // namespace tg
