#include "tapegrad/ops/batch_norm.hpp"

#include <algorithm>

#include "tapegrad/ops/batch_norm_kernel.hpp"

namespace tg {

namespace {

// The compute type of a float input (compute_dtype), or an error naming `op`.
DType compute_type(const Tensor& t, const char* op) {
    if (!is_float(t.dtype())) fail("dtype", op, ": needs a float input, got ", dtype_name(t.dtype()));
    return compute_dtype(t.dtype());
}

using simd_bn::Ncs;

// [N, C, S]: the three extents of an input [N, C, X...].
Ncs ncs_of(const Shape& s, const char* op) {
    if (s.size() < 2) fail("input", op, ": input ", shape_str(s), " must be [N, C] or [N, C, X...]");
    std::int64_t S = 1;
    for (std::size_t a = 2; a < s.size(); ++a) S *= s[a];
    return {s[0], s[1], S};
}

struct BaseSet {};  // the tag of the tables compiled here, for Isa::scalar

template <class T>
const simd_bn::Kernels<T>& bn_kernels() {
    static const simd::TypedDispatch<simd_bn::Kernels> d{{simd_bn::f32_scalar, simd_bn::f32_avx2, simd_bn::f32_avx512},
                                                          {simd_bn::f64_scalar, simd_bn::f64_avx2, simd_bn::f64_avx512}};
    return d.active<T>();
}

void check_channels(const std::vector<double>& v, std::int64_t C, const char* what, const char* op) {
    if (static_cast<std::int64_t>(v.size()) != C) fail(what, op, ": ", what, " has ", v.size(), " values for ", C, " channels");
}

}  // namespace

TG_INSTANTIATE_BN(BaseSet, scalar)

std::int64_t channel_count(const Shape& x, const char* op) {
    const Ncs d = ncs_of(x, op);
    return d.N * d.S;
}

ChannelMoments channel_moments(const Tensor& x) {
    const Ncs d = ncs_of(x.shape(), "channel_moments");
    const DType ct = compute_type(x, "channel_moments");
    const Tensor xc = x.to(ct).contiguous();
    ChannelMoments m{std::vector<double>(static_cast<std::size_t>(d.C)), std::vector<double>(static_cast<std::size_t>(d.C))};
    if (d.N * d.S == 0) fail("input", "channel_moments: input ", shape_str(x.shape()), " has no values per channel");
    with_compute_type(ct, [&](auto t) {
        using T = decltype(t);
        bn_kernels<T>().moments(xc.data<T>(), d, m.mean.data(), m.var.data());
    });
    return m;
}

Tensor channel_affine(const Tensor& x, const std::vector<double>& scale, const std::vector<double>& shift,
                      const std::vector<double>& center, bool relu) {
    const Ncs d = ncs_of(x.shape(), "channel_affine");
    const DType ct = compute_type(x, "channel_affine");
    check_channels(scale, d.C, "scale", "channel_affine");
    if (!shift.empty()) check_channels(shift, d.C, "shift", "channel_affine");
    if (!center.empty()) check_channels(center, d.C, "center", "channel_affine");
    const Tensor xc = x.to(ct).contiguous();
    Tensor y = Tensor::empty(x.shape(), ct);
    with_compute_type(ct, [&](auto t) {
        using T = decltype(t);
        const double* sh = shift.empty() ? nullptr : shift.data();
        const double* ce = center.empty() ? nullptr : center.data();
        bn_kernels<T>().affine[relu](xc.data<T>(), d, scale.data(), sh, ce, y.data<T>());
    });
    return y.to(x.dtype());
}

// The ReLU output `r` of the fused kernels in the compute type ct, checked against x's shape.
Tensor relu_operand(const Tensor& r, const Tensor& x, DType ct, const char* op) {
    if (!r.defined()) return r;
    if (r.shape() != x.shape())
        fail("relu_out", op, ": relu_out has shape ", shape_str(r.shape()), " but x has shape ", shape_str(x.shape()));
    return r.to(ct).contiguous();
}

ChannelSums channel_sums(const Tensor& g, const Tensor& x, const std::vector<double>& center, const Tensor& relu_out) {
    if (g.shape() != x.shape())
        fail("shape", "channel_sums: g has shape ", shape_str(g.shape()), " but x has shape ", shape_str(x.shape()));
    const Ncs d = ncs_of(x.shape(), "channel_sums");
    const DType ct = compute_type(x, "channel_sums");
    if (!center.empty()) check_channels(center, d.C, "center", "channel_sums");
    const Tensor gc = g.to(ct).contiguous(), xc = x.to(ct).contiguous(), rc = relu_operand(relu_out, x, ct, "channel_sums");
    ChannelSums s{std::vector<double>(static_cast<std::size_t>(d.C)), std::vector<double>(static_cast<std::size_t>(d.C))};
    with_compute_type(ct, [&](auto t) {
        using T = decltype(t);
        const double* ce = center.empty() ? nullptr : center.data();
        bn_kernels<T>().sums[rc.defined()](gc.data<T>(), xc.data<T>(), rc.defined() ? rc.data<T>() : nullptr, d, ce,
                                           s.g.data(), s.gx.data());
    });
    return s;
}

Tensor batch_norm_input_grad(const Tensor& g, const Tensor& x, const std::vector<double>& mean,
                             const std::vector<double>& invstd, const std::vector<double>& weight,
                             const std::vector<double>& sum_g, const std::vector<double>& sum_gxhat, const Tensor& relu_out) {
    const char* op = "batch_norm_input_grad";
    if (g.shape() != x.shape()) fail("shape", op, ": g has shape ", shape_str(g.shape()), " but x has shape ", shape_str(x.shape()));
    const Ncs d = ncs_of(x.shape(), op);
    const DType ct = compute_type(x, op);
    check_channels(mean, d.C, "mean", op);
    check_channels(invstd, d.C, "invstd", op);
    check_channels(weight, d.C, "weight", op);
    check_channels(sum_g, d.C, "sum_g", op);
    check_channels(sum_gxhat, d.C, "sum_gxhat", op);
    const Tensor gc = g.to(ct).contiguous(), xc = x.to(ct).contiguous(), rc = relu_operand(relu_out, x, ct, op);
    Tensor dx = Tensor::empty(x.shape(), ct);
    with_compute_type(ct, [&](auto t) {
        using T = decltype(t);
        bn_kernels<T>().input_grad[rc.defined()](gc.data<T>(), xc.data<T>(), rc.defined() ? rc.data<T>() : nullptr, d,
                                                 mean.data(), invstd.data(), weight.data(), sum_g.data(), sum_gxhat.data(),
                                                 dx.data<T>());
    });
    return dx.to(g.dtype());
}

}  // namespace tg
