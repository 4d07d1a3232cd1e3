#include "tapegrad/ops/conv_reference.hpp"

namespace tg::reference {

namespace {

// One term of the sums: output position j, kernel tap k and input position t = j·s + k·d − pb,
// each a flat (row-major) index over its spatial axes, for a t inside the input.
struct Term {
    std::int64_t j, k, t;
};

// Every term of one (n, g, o, i), in order of j then k; the same for all of them.
std::vector<Term> terms(const ConvGeometry& g) {
    const int D = g.D();
    const std::int64_t P = g.out_numel(), Kn = g.kernel_numel();
    std::vector<Term> out;
    for (std::int64_t jf = 0; jf < P; ++jf)
        for (std::int64_t kf = 0; kf < Kn; ++kf) {
            std::int64_t rj = jf, rk = kf, tf = 0, stride = 1;
            bool inside = true;
            for (int a = D - 1; a >= 0; --a) {
                const std::int64_t j = rj % g.out_size[a], k = rk % g.kernel[a];
                rj /= g.out_size[a];
                rk /= g.kernel[a];
                const std::int64_t t = j * g.stride[a] + k * g.dilation[a] - g.pad_begin[a];
                if (t < 0 || t >= g.in_size[a]) inside = false;
                tf += t * stride;
                stride *= g.in_size[a];
            }
            if (inside) out.push_back({jf, kf, tf});
        }
    return out;
}

// Offset of element (n, channel c, flat spatial index sp) in a contiguous tensor of the given
// layout with C channels and P positions.
std::int64_t offset(Layout layout, std::int64_t C, std::int64_t P, std::int64_t n, std::int64_t c, std::int64_t sp) {
    return layout == Layout::NCX ? (n * C + c) * P + sp : (n * P + sp) * C + c;
}

// Calls f(x offset, y offset, W offset) for every term of the sum, x being the input side
// (G·Ig channels, in_size) and y the output side (G·Og channels, out_size).
template <class F>
void for_each_term(const ConvGeometry& g, F f) {
    const std::vector<Term> ts = terms(g);
    const std::int64_t Ci = g.G * g.Ig, Co = g.G * g.Og, Pi = g.in_numel(), Po = g.out_numel();
    const std::int64_t Kn = g.kernel_numel();
    for (std::int64_t n = 0; n < g.N; ++n)
        for (std::int64_t grp = 0; grp < g.G; ++grp)
            for (std::int64_t o = 0; o < g.Og; ++o)
                for (std::int64_t i = 0; i < g.Ig; ++i) {
                    const std::int64_t w0 = ((grp * g.Og + o) * g.Ig + i) * Kn;
                    for (const Term& term : ts)
                        f(offset(g.layout, Ci, Pi, n, grp * g.Ig + i, term.t),
                          offset(g.layout, Co, Po, n, grp * g.Og + o, term.j), w0 + term.k);
                }
}

}  // namespace

Tensor conv_forward(const Tensor& x, const Tensor& W, const ConvGeometry& g) {
    g.validate();
    const std::vector<double> xv = x.values(), wv = W.values();
    std::vector<double> y(static_cast<std::size_t>(shape_numel(g.out_shape())), 0.0);
    for_each_term(g, [&](std::int64_t xo, std::int64_t yo, std::int64_t wo) { y[yo] += xv[xo] * wv[wo]; });
    return Tensor::from(g.out_shape(), y, DType::f64);
}

Tensor conv_transposed(const Tensor& u, const Tensor& W, const ConvGeometry& g) {
    g.validate();
    const std::vector<double> uv = u.values(), wv = W.values();
    std::vector<double> r(static_cast<std::size_t>(shape_numel(g.in_shape())), 0.0);
    for_each_term(g, [&](std::int64_t ro, std::int64_t uo, std::int64_t wo) { r[ro] += uv[uo] * wv[wo]; });
    return Tensor::from(g.in_shape(), r, DType::f64);
}

Tensor conv_weight_grad(const Tensor& x, const Tensor& u, const ConvGeometry& g) {
    g.validate();
    const std::vector<double> xv = x.values(), uv = u.values();
    std::vector<double> dw(static_cast<std::size_t>(shape_numel(g.weight_shape())), 0.0);
    for_each_term(g, [&](std::int64_t xo, std::int64_t uo, std::int64_t wo) { dw[wo] += uv[uo] * xv[xo]; });
    return Tensor::from(g.weight_shape(), dw, DType::f64);
}

}  // namespace tg::reference
