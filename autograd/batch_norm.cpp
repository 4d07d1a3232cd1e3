#include "tapegrad/autograd/batch_norm.hpp"

#include <cmath>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/ops/batch_norm.hpp"
#include "tapegrad/ops/math.hpp"

namespace tg::ag {

namespace {

// The channel count of x [N, C, X...], with the per-channel parameters checked against it.
std::int64_t channels_of(const Variable& x, const char* op) {
    if (x.ndim() < 2) fail("input", op, ": input ", shape_str(x.shape()), " must be [N, C] or [N, C, X...]");
    return x.shape()[1];
}
void check_channel_param(const Variable& p, std::int64_t C, const char* what, const char* op) {
    if (p.defined() && p.shape() != Shape{C})
        fail(what, op, ": ", what, " has shape ", shape_str(p.shape()), ", the input has ", C, " channels");
}

// The axes a channel's values run over (all but axis 1) and the shape [1, C, 1...] a
// per-channel value broadcasts from.
std::vector<int> stat_axes(int ndim) {
    std::vector<int> axes{0};
    for (int a = 2; a < ndim; ++a) axes.push_back(a);
    return axes;
}
Shape stat_shape(const Shape& s) {
    Shape st(s.size(), 1);
    st[1] = s[1];
    return st;
}

// batch_norm's input gradients written with the differentiable ops (the create_graph form;
// the first-order values are those of the fused kernels). w is undefined without a weight.
Grads batch_norm_grads_graph(const Variable& x, const Variable& w, const Variable& g, double eps) {
    const std::vector<int> axes = stat_axes(x.ndim());
    const Shape st = stat_shape(x.shape());
    const double n = static_cast<double>(x.numel() / x.shape()[1]);
    const Variable d = sub(x, mean(x, axes, true));
    const Variable r = rsqrt(affine(mean(mul(d, d), axes, true), 1, eps));
    const Variable xhat = mul(d, r);
    const Variable sg = sum(g, axes, true), sgx = sum(mul(g, xhat), axes, true);
    const Variable k = w.defined() ? mul(reshape(w, st), r) : r;
    const Variable dx = mul(k, sub(sub(g, scale(sg, 1 / n)), mul(xhat, scale(sgx, 1 / n))));
    return {dx, reshape(sgx, {x.shape()[1]}), reshape(sg, {x.shape()[1]})};
}

}  // namespace

Variable batch_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps, Tensor* batch_mean,
                    Tensor* batch_var, bool relu) {
    const char* op = relu ? "batch_norm_relu" : "batch_norm";
    const std::int64_t C = channels_of(x, op);
    check_channel_param(weight, C, "weight", op);
    check_channel_param(bias, C, "bias", op);
    if (!(eps > 0)) fail("eps", op, ": eps ", eps, " must be > 0");
    const ChannelMoments m = channel_moments(x.value());
    const std::size_t Cs = static_cast<std::size_t>(C);
    std::vector<double> invstd(Cs), scale(Cs, 1.0);
    const std::vector<double> w = weight.defined() ? weight.value().values() : std::vector<double>(Cs, 1.0);
    for (std::size_t c = 0; c < Cs; ++c) {
        invstd[c] = 1 / std::sqrt(m.var[c] + eps);
        scale[c] = w[c] * invstd[c];
    }
    Tensor y =
        tg::channel_affine(x.value(), scale, bias.defined() ? bias.value().values() : std::vector<double>{}, m.mean, relu);
    if (batch_mean) *batch_mean = Tensor::from({C}, m.mean, x.dtype());
    if (batch_var) *batch_var = Tensor::from({C}, m.var, x.dtype());

    // The inputs on the tape: x, then the weight and the bias when defined.
    std::vector<Variable> inputs{x};
    const int wi = weight.defined() ? static_cast<int>(inputs.size()) : -1;
    if (weight.defined()) inputs.push_back(weight);
    const int bi = bias.defined() ? static_cast<int>(inputs.size()) : -1;
    if (bias.defined()) inputs.push_back(bias);
    const DType wdt = weight.defined() ? weight.dtype() : x.dtype(), bdt = bias.defined() ? bias.dtype() : x.dtype();
    Save save{.inputs = {0}, .output = relu};  // the ReLU's gradient reads its output
    if (wi >= 0) save.inputs.push_back(wi);
    return record(op, std::move(y), inputs, save,
                  [=, mean = m.mean, n_in = inputs.size()](const SavedContext& c, const Variable& g) -> Grads {
                      Grads out(n_in);
                      if (grad_enabled()) {  // create_graph: the differentiable form
                          // (through the ReLU: relu_grad, its mask a constant of the output)
                          const Variable gr_in = relu ? relu_grad(g, c.output().value()) : g;
                          const Grads gr = batch_norm_grads_graph(c.input(0), wi >= 0 ? c.input(wi) : Variable(), gr_in, eps);
                          out[0] = gr[0];
                          if (wi >= 0) out[static_cast<std::size_t>(wi)] = gr[1];
                          if (bi >= 0) out[static_cast<std::size_t>(bi)] = gr[2];
                          return out;
                      }
                      const Tensor xv = c.input(0).value(), r = relu ? c.output().value() : Tensor();
                      const ChannelSums s = channel_sums(g.value(), xv, mean, r);
                      std::vector<double> sgxhat(Cs);
                      for (std::size_t k = 0; k < Cs; ++k) sgxhat[k] = invstd[k] * s.gx[k];
                      if (c.needs_grad(0)) {
                          const std::vector<double> wv = wi >= 0 ? c.input(wi).value().values() : std::vector<double>(Cs, 1.0);
                          out[0] = constant(batch_norm_input_grad(g.value(), xv, mean, invstd, wv, s.g, sgxhat, r));
                      }
                      if (wi >= 0 && c.needs_grad(wi)) out[static_cast<std::size_t>(wi)] = constant(Tensor::from({C}, sgxhat, wdt));
                      if (bi >= 0 && c.needs_grad(bi)) out[static_cast<std::size_t>(bi)] = constant(Tensor::from({C}, s.g, bdt));
                      return out;
                  });
}

Variable channel_affine(const Variable& x, const Variable& scale, const Variable& shift, const Tensor& center) {
    const char* op = "channel_affine";
    const std::int64_t C = channels_of(x, op);
    if (!scale.defined()) fail("scale", op, ": scale is undefined");
    check_channel_param(scale, C, "scale", op);
    check_channel_param(shift, C, "shift", op);
    if (center.defined() && center.shape() != Shape{C})
        fail("center", op, ": center has shape ", shape_str(center.shape()), ", the input has ", C, " channels");
    Tensor y = tg::channel_affine(x.value(), scale.value().values(),
                                  shift.defined() ? shift.value().values() : std::vector<double>{},
                                  center.defined() ? center.values() : std::vector<double>{});
    std::vector<Variable> inputs{x, scale};
    if (shift.defined()) inputs.push_back(shift);
    const Shape st = stat_shape(x.shape());
    return record(op, std::move(y), inputs, {.inputs = {0, 1}},
                  [C, st, center = center.defined() ? center.to(x.dtype()) : Tensor(), n_in = inputs.size()](const SavedContext& c, const Variable& g) -> Grads {
                      const std::vector<int> axes = stat_axes(g.ndim());
                      Grads out(n_in);
                      if (c.needs_grad(0)) out[0] = channel_affine(g, c.input(1), Variable());
                      if (c.needs_grad(1)) {
                          const Variable xc = center.defined() ? sub(c.input(0), constant(center.reshape(st))) : c.input(0);
                          out[1] = reshape(sum(mul(g, xc), axes), {C});
                      }
                      if (n_in == 3 && c.needs_grad(2)) out[2] = reshape(sum(g, axes), {C});
                      return out;
                  });
}

}  // namespace tg::ag
