#include "tapegrad/ops/batch_norm.hpp"

#include <algorithm>

#include "tapegrad/core/blas.hpp"

namespace tg {

namespace {

// The compute type of a float input (compute_dtype), or an error naming `op`.
DType compute_type(const Tensor& t, const char* op) {
    if (!is_float(t.dtype())) fail("dtype", op, ": needs a float input, got ", dtype_name(t.dtype()));
    return compute_dtype(t.dtype());
}

// [N, C, S]: the three extents of an input [N, C, X...].
struct Ncs {
    std::int64_t N, C, S;
};
Ncs ncs_of(const Shape& s, const char* op) {
    if (s.size() < 2) fail("input", op, ": input ", shape_str(s), " must be [N, C] or [N, C, X...]");
    std::int64_t S = 1;
    for (std::size_t a = 2; a < s.size(); ++a) S *= s[a];
    return {s[0], s[1], S};
}

// A team for a memory-bound pass over `numel` values: one thread below a few hundred
// thousand (a fork and a barrier cost more), and never more threads than channels.
int team_for(std::int64_t numel, std::int64_t C) {
    return std::max(1, std::min<int>(team_size(static_cast<double>(numel), kTeamMinValues), static_cast<int>(C)));
}

void check_channels(const std::vector<double>& v, std::int64_t C, const char* what, const char* op) {
    if (static_cast<std::int64_t>(v.size()) != C) fail(what, op, ": ", what, " has ", v.size(), " values for ", C, " channels");
}

template <class T>
void moments(const T* x, Ncs d, double* mean, double* var) {
    const double n = static_cast<double>(d.N * d.S);
#pragma omp parallel for num_threads(team_for(d.N * d.C * d.S, d.C)) schedule(static)
    for (std::int64_t c = 0; c < d.C; ++c) {
        double s = 0;
        for (std::int64_t i = 0; i < d.N; ++i) {
            const T* r = x + (i * d.C + c) * d.S;
            T rs = 0;
#pragma omp simd reduction(+ : rs)
            for (std::int64_t j = 0; j < d.S; ++j) rs += r[j];
            s += static_cast<double>(rs);
        }
        const double m = s / n;
        const T mt = static_cast<T>(m);
        double q = 0;  // Σ(x − m)², around the rounded mean, corrected below
        double e = 0;  // Σ(x − m): the rounding of m, exactly removed as e²/n
        for (std::int64_t i = 0; i < d.N; ++i) {
            const T* r = x + (i * d.C + c) * d.S;
            T rq = 0, re = 0;
#pragma omp simd reduction(+ : rq, re)
            for (std::int64_t j = 0; j < d.S; ++j) {
                const T t = r[j] - mt;
                rq += t * t;
                re += t;
            }
            q += static_cast<double>(rq);
            e += static_cast<double>(re);
        }
        mean[c] = m;
        var[c] = std::max(0.0, (q - e * e / n) / n);
    }
}

template <bool Relu, class T>
void affine(const T* x, Ncs d, const double* scale, const double* shift, const double* center, T* y) {
#pragma omp parallel for num_threads(team_for(d.N * d.C * d.S, d.C)) schedule(static)
    for (std::int64_t c = 0; c < d.C; ++c) {
        const T a = static_cast<T>(scale[c]), b = shift ? static_cast<T>(shift[c]) : T(0),
                m = center ? static_cast<T>(center[c]) : T(0);
        for (std::int64_t i = 0; i < d.N; ++i) {
            const std::int64_t at = (i * d.C + c) * d.S;
#pragma omp simd
            for (std::int64_t j = 0; j < d.S; ++j) {
                const T v = (x[at + j] - m) * a + b;
                y[at + j] = Relu && v < T(0) ? T(0) : v;  // fn::Relu's rule: NaN and −0 pass
            }
        }
    }
}

// The gradient through a ReLU whose output is r: g where r > 0 or r is NaN (fn::Step's
// rule, as ag::relu's backward), 0 where r <= 0; g itself without a ReLU. (A template
// flag, not a null test, so the loops stay vectorised.)
template <bool Relu, class T>
inline T through_relu(T g, const T* r, std::int64_t k) {
    if constexpr (Relu) return (r[k] > T(0)) | (r[k] != r[k]) ? g : T(0);
    else return g;
}

template <bool Relu, class T>
void sums(const T* g, const T* x, const T* r, Ncs d, const double* center, double* sg, double* sgx) {
#pragma omp parallel for num_threads(team_for(d.N * d.C * d.S, d.C)) schedule(static)
    for (std::int64_t c = 0; c < d.C; ++c) {
        const T m = center ? static_cast<T>(center[c]) : T(0);
        double a = 0, b = 0;
        for (std::int64_t i = 0; i < d.N; ++i) {
            const std::int64_t at = (i * d.C + c) * d.S;
            T ra = 0, rb = 0;
#pragma omp simd reduction(+ : ra, rb)
            for (std::int64_t j = 0; j < d.S; ++j) {
                const T gj = through_relu<Relu>(g[at + j], r, at + j);
                ra += gj;
                rb += gj * (x[at + j] - m);
            }
            a += static_cast<double>(ra);
            b += static_cast<double>(rb);
        }
        sg[c] = a, sgx[c] = b;
    }
}

template <bool Relu, class T>
void input_grad(const T* g, const T* x, const T* r, Ncs d, const double* mean, const double* invstd, const double* weight,
                const double* sum_g, const double* sum_gxhat, T* dx) {
    const double n = static_cast<double>(d.N * d.S);
#pragma omp parallel for num_threads(team_for(d.N * d.C * d.S, d.C)) schedule(static)
    for (std::int64_t c = 0; c < d.C; ++c) {
        // dx = k·(g − Σg/n − (x − mean)·invstd·Σg·x̂/n) = k·g − k·invstd·Σg·x̂/n·x + const
        const double k = weight[c] * invstd[c];
        const double kx = k * invstd[c] * sum_gxhat[c] / n;
        const T a = static_cast<T>(k), b = static_cast<T>(kx), m = static_cast<T>(mean[c]),
                o = static_cast<T>(k * sum_g[c] / n);
        for (std::int64_t i = 0; i < d.N; ++i) {
            const std::int64_t at = (i * d.C + c) * d.S;
#pragma omp simd
            for (std::int64_t j = 0; j < d.S; ++j) dx[at + j] = a * through_relu<Relu>(g[at + j], r, at + j) - b * (x[at + j] - m) - o;
        }
    }
}

}  // namespace

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
        moments(xc.data<T>(), d, m.mean.data(), m.var.data());
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
        if (relu) affine<true>(xc.data<T>(), d, scale.data(), sh, ce, y.data<T>());
        else affine<false>(xc.data<T>(), d, scale.data(), sh, ce, y.data<T>());
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
        if (rc.defined()) sums<true>(gc.data<T>(), xc.data<T>(), rc.data<T>(), d, ce, s.g.data(), s.gx.data());
        else sums<false>(gc.data<T>(), xc.data<T>(), static_cast<const T*>(nullptr), d, ce, s.g.data(), s.gx.data());
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
        if (rc.defined())
            input_grad<true>(gc.data<T>(), xc.data<T>(), rc.data<T>(), d, mean.data(), invstd.data(), weight.data(),
                             sum_g.data(), sum_gxhat.data(), dx.data<T>());
        else
            input_grad<false>(gc.data<T>(), xc.data<T>(), static_cast<const T*>(nullptr), d, mean.data(), invstd.data(),
                              weight.data(), sum_g.data(), sum_gxhat.data(), dx.data<T>());
    });
    return dx.to(g.dtype());
}

}  // namespace tg
