#include "tapegrad/ops/conv_reference.hpp"

#include <functional>

namespace tg::reference {

namespace {

// Offset of element (n, channel c, spatial multi-index pos) in a contiguous tensor of the
// given layout.
std::int64_t offset(Layout layout, std::int64_t C, const Shape& spatial, std::int64_t n, std::int64_t c,
                    const std::vector<std::int64_t>& pos) {
    std::int64_t sp = 0;
    for (std::size_t a = 0; a < spatial.size(); ++a) sp = sp * spatial[a] + pos[a];
    std::int64_t P = 1;
    for (std::int64_t v : spatial) P *= v;
    return layout == Layout::NCX ? (n * C + c) * P + sp : (n * P + sp) * C + c;
}

// Calls f(n, g, o, i, j, k, t, inside) for every term of the sum, where t = j·s + k·d − pb.
void for_each_term(const ConvGeometry& g,
                   const std::function<void(std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                                            const std::vector<std::int64_t>&, std::int64_t,
                                            const std::vector<std::int64_t>&)>& f) {
    const int D = g.D();
    const std::int64_t P = g.out_numel(), Kn = g.kernel_numel();
    std::vector<std::int64_t> j(D), k(D), t(D);
    for (std::int64_t n = 0; n < g.N; ++n)
        for (std::int64_t grp = 0; grp < g.G; ++grp)
            for (std::int64_t o = 0; o < g.Og; ++o)
                for (std::int64_t i = 0; i < g.Ig; ++i)
                    for (std::int64_t jf = 0; jf < P; ++jf)
                        for (std::int64_t kf = 0; kf < Kn; ++kf) {
                            std::int64_t rj = jf, rk = kf;
                            bool inside = true;
                            for (int a = D - 1; a >= 0; --a) {
                                j[a] = rj % g.out_size[a];
                                rj /= g.out_size[a];
                                k[a] = rk % g.kernel[a];
                                rk /= g.kernel[a];
                                t[a] = j[a] * g.stride[a] + k[a] * g.dilation[a] - g.pad_begin[a];
                                if (t[a] < 0 || t[a] >= g.in_size[a]) inside = false;
                            }
                            if (inside) f(n, grp, o, i, j, kf, t);
                        }
}

std::int64_t w_index(const ConvGeometry& g, std::int64_t grp, std::int64_t o, std::int64_t i, std::int64_t kf) {
    return ((grp * g.Og + o) * g.Ig + i) * g.kernel_numel() + kf;
}

}  // namespace

Tensor conv_forward(const Tensor& x, const Tensor& W, const ConvGeometry& g) {
    g.validate();
    const std::vector<double> xv = x.values(), wv = W.values();
    std::vector<double> y(static_cast<std::size_t>(shape_numel(g.out_shape())), 0.0);
    for_each_term(g, [&](auto n, auto grp, auto o, auto i, const auto& j, auto kf, const auto& t) {
        y[offset(g.layout, g.G * g.Og, g.out_size, n, grp * g.Og + o, j)] +=
            xv[offset(g.layout, g.G * g.Ig, g.in_size, n, grp * g.Ig + i, t)] * wv[w_index(g, grp, o, i, kf)];
    });
    return Tensor::from(g.out_shape(), y, DType::f64);
}

Tensor conv_transposed(const Tensor& u, const Tensor& W, const ConvGeometry& g) {
    g.validate();
    const std::vector<double> uv = u.values(), wv = W.values();
    std::vector<double> r(static_cast<std::size_t>(shape_numel(g.in_shape())), 0.0);
    for_each_term(g, [&](auto n, auto grp, auto o, auto i, const auto& j, auto kf, const auto& t) {
        r[offset(g.layout, g.G * g.Ig, g.in_size, n, grp * g.Ig + i, t)] +=
            uv[offset(g.layout, g.G * g.Og, g.out_size, n, grp * g.Og + o, j)] * wv[w_index(g, grp, o, i, kf)];
    });
    return Tensor::from(g.in_shape(), r, DType::f64);
}

Tensor conv_weight_grad(const Tensor& x, const Tensor& u, const ConvGeometry& g) {
    g.validate();
    const std::vector<double> xv = x.values(), uv = u.values();
    std::vector<double> dw(static_cast<std::size_t>(shape_numel(g.weight_shape())), 0.0);
    for_each_term(g, [&](auto n, auto grp, auto o, auto i, const auto& j, auto kf, const auto& t) {
        dw[w_index(g, grp, o, i, kf)] += uv[offset(g.layout, g.G * g.Og, g.out_size, n, grp * g.Og + o, j)] *
                                         xv[offset(g.layout, g.G * g.Ig, g.in_size, n, grp * g.Ig + i, t)];
    });
    return Tensor::from(g.weight_shape(), dw, DType::f64);
}

}  // namespace tg::reference
