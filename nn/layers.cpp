#include "tapegrad/nn/layers.hpp"

#include <cmath>
#include <algorithm>
#include <cstring>

#include "tapegrad/autograd/batch_norm.hpp"
#include "tapegrad/autograd/indexing.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/autograd/pool.hpp"
#include "tapegrad/core/factories.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/ops/math.hpp"
#include "tapegrad/ops/reduce.hpp"

namespace tg::nn {

namespace {

PoolOptions checked(PoolOptions o, const char* layer) {
    if (o.kernel().empty()) fail("kernel", layer, ": kernel must have at least one axis");
    for (std::int64_t k : o.kernel())
        if (k < 1) fail("kernel", layer, ": kernel size ", k, " must be >= 1");
    // pool_geometry checks the rest against an input; check the lengths and ranges now.
    const std::size_t D = o.kernel().size();
    auto check = [&](const Shape& v, const char* key, std::int64_t min) {
        if (!v.empty() && v.size() != 1 && v.size() != D)
            fail(key, layer, ": ", key, " has ", v.size(), " values for ", D, " spatial axes");
        for (std::int64_t e : v)
            if (e < min) fail(key, layer, ": ", key, " value ", e, " must be >= ", min);
    };
    check(o.stride(), "stride", 1);
    check(o.padding(), "padding", 0);
    check(o.dilation(), "dilation", 1);
    return o;
}

ConvGeometry geometry_of(const PoolOptions& o, const Shape& s, const char* layer) {
    return ag::pool_geometry(s, o.kernel(), o.stride(), o.padding(), o.dilation(), layer);
}

}  // namespace

MaxPool::MaxPool(PoolOptions opt) : opt_(checked(std::move(opt), "MaxPool")) {
    const std::size_t D = opt_.kernel().size();
    for (std::size_t a = 0; a < D; ++a) {
        const std::int64_t p = opt_.padding().size() == 1 ? opt_.padding()[0] : opt_.padding()[a];
        if (2 * p > opt_.kernel()[a])
            fail("padding", "MaxPool: padding ", p, " must be at most half the kernel size ", opt_.kernel()[a]);
    }
}
ConvGeometry MaxPool::geometry(const Shape& s) const { return geometry_of(opt_, s, "MaxPool"); }
Variable MaxPool::forward(const Variable& x) { return ag::max_pool(x, geometry(x.shape())); }

AvgPool::AvgPool(PoolOptions opt) : opt_(checked(std::move(opt), "AvgPool")) {}
ConvGeometry AvgPool::geometry(const Shape& s) const { return geometry_of(opt_, s, "AvgPool"); }
Variable AvgPool::forward(const Variable& x) { return ag::avg_pool(x, geometry(x.shape())); }

// ---- batch normalisation --------------------------------------------------------------

namespace {

// Writes `values` into a contiguous buffer in place and bumps its version.
void write_into(Tensor& dst, const std::vector<double>& values) {
    const Tensor src = Tensor::from(dst.shape(), values, dst.dtype());
    std::memcpy(dst.raw_data(), src.raw_data(), static_cast<std::size_t>(dst.numel()) * dtype_size(dst.dtype()));
    dst.bump_version();
}

}  // namespace

Variable batch_norm_train(const Variable& x, const Variable& weight, const Variable& bias, double eps, Tensor* batch_mean,
                          Tensor* batch_var, const std::function<Variable(const Variable&)>& across, std::int64_t* count,
                          bool relu) {
    if (!across) {
        if (count && x.ndim() >= 2) *count = x.numel() / x.shape()[1];
        return ag::batch_norm(x, weight, bias, eps, batch_mean, batch_var, relu);
    }
    // SyncBatchNorm: the global batch's statistics, from per-channel sums over every
    // process's x, written with the differentiable ops so that the gradient flows back
    // through `across` to every process.
    if (x.ndim() < 2) fail("input", "batch_norm: input ", shape_str(x.shape()), " must be [N, C] or [N, C, X...]");
    const std::int64_t C = x.shape()[1];
    std::vector<int> axes{0};
    for (int a = 2; a < x.ndim(); ++a) axes.push_back(a);
    const double n = across(ag::constant(Tensor::full({}, static_cast<double>(x.numel() / C), DType::f64))).item();
    const Variable mu = ag::scale(across(ag::sum(x, axes, true)), 1.0 / n);
    const Variable d = ag::sub(x, mu);
    const Variable var = ag::scale(across(ag::sum(ag::mul(d, d), axes, true)), 1.0 / n);
    const Variable xhat = ag::mul(d, ag::rsqrt(ag::affine(var, 1, eps)));
    if (batch_mean) *batch_mean = mu.value().reshape({C});
    if (batch_var) *batch_var = var.value().reshape({C});
    if (count) *count = static_cast<std::int64_t>(n);
    const Variable y = !weight.defined() && !bias.defined()
                           ? xhat
                           : ag::channel_affine(xhat, weight.defined() ? weight : ag::constant(ones({C}, x.dtype())), bias);
    return relu ? ag::relu(y) : y;
}

Variable batch_norm_eval(const Variable& x, const Tensor& mean, const Tensor& var, const Variable& weight,
                         const Variable& bias, double eps) {
    if (x.ndim() < 2) fail("input", "batch_norm: input ", shape_str(x.shape()), " must be [N, C] or [N, C, X...]");
    const std::int64_t C = x.shape()[1];
    if (mean.shape() != Shape{C} || var.shape() != Shape{C})
        fail("running_stats", "batch_norm: mean ", shape_str(mean.shape()), " and var ", shape_str(var.shape()),
             " must be [", C, "]");
    for (const auto& [p, what] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}})
        if (p->defined() && p->shape() != Shape{C})
            fail(what, "batch_norm: ", what, " has shape ", shape_str(p->shape()), ", the input has ", C, " channels");
    std::vector<double> inv = var.values();
    for (double& v : inv) v = 1.0 / std::sqrt(v + eps);
    const Variable inv_std = ag::constant(Tensor::from({C}, inv, x.dtype()));
    // weight·invstd is the scale: a [C] op on the tape, so the weight still gets its gradient
    return ag::channel_affine(x, weight.defined() ? ag::mul(weight, inv_std) : inv_std, bias, mean);
}

BatchNorm::BatchNorm(std::int64_t num_features, double eps, double momentum, DType dtype)
    : C_(num_features), eps_(eps), momentum_(momentum) {
    if (C_ < 1) fail("num_features", "BatchNorm: num_features ", C_, " must be >= 1");
    if (!(eps > 0)) fail("eps", "BatchNorm: eps ", eps, " must be > 0");
    if (!(momentum >= 0 && momentum <= 1)) fail("momentum", "BatchNorm: momentum ", momentum, " must be in [0, 1]");
    if (!is_float(dtype)) fail("dtype", "BatchNorm: ", dtype_name(dtype), " is not a float dtype");
    weight = register_parameter("weight", Tensor::full({C_}, 1.0, dtype));
    bias = register_parameter("bias", Tensor::zeros({C_}, dtype));
    register_buffer("running_mean", Tensor::zeros({C_}, dtype));
    register_buffer("running_var", Tensor::full({C_}, 1.0, dtype));
    register_buffer("num_batches_tracked", Tensor::zeros({}, DType::i64));
}

Variable BatchNorm::forward(const Variable& x) {
    if (x.ndim() < 2 || x.shape()[1] != C_)
        fail("input", "BatchNorm: input ", shape_str(x.shape()), " must be [N, ", C_, "] or [N, ", C_, ", X...]");
    if (!is_training()) {
        const Variable y = batch_norm_eval(x, running_mean(), running_var(), weight, bias, eps_);
        return relu_ ? ag::relu(y) : y;
    }
    const std::int64_t n = x.numel() / C_;
    if (n < 2)
        fail("input", "BatchNorm: training needs more than one value per channel, input ", shape_str(x.shape()),
             " has ", n, " (use eval() for single samples)");
    Tensor bm, bv;
    std::int64_t count = n;  // over every process with across_
    Variable y = batch_norm_train(x, weight, bias, eps_, &bm, &bv, across_, &count, relu_);
    const std::vector<double> m = bm.values(), v = bv.values();
    std::vector<double> rm = running_mean().values(), rv = running_var().values();
    const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
    for (std::size_t c = 0; c < rm.size(); ++c) {
        rm[c] = (1 - momentum_) * rm[c] + momentum_ * m[c];
        rv[c] = (1 - momentum_) * rv[c] + momentum_ * v[c] * unbias;
    }
    write_into(buffer("running_mean"), rm);
    write_into(buffer("running_var"), rv);
    write_into(buffer("num_batches_tracked"), {static_cast<double>(num_batches_tracked() + 1)});
    return y;
}

// ---- dropout --------------------------------------------------------------------------------

Dropout::Dropout(double p) : p_(p) {
    if (!(p >= 0 && p <= 1)) fail("p", "Dropout: p ", p, " must be in [0, 1]");
}

Variable Dropout::forward(const Variable& x) {
    if (!is_training() || p_ == 0) return x;
    if (!is_float(x.dtype())) fail("input", "Dropout: needs a float input, got ", dtype_name(x.dtype()));
    // One uniform draw per element, written straight into the mask in the compute type.
    std::vector<double> u(static_cast<std::size_t>(x.numel()));
    default_generator().fill_uniform(u);
    const double keep = p_ == 1 ? 0.0 : 1.0 / (1.0 - p_);
    Tensor mask = Tensor::empty(x.shape(), compute_dtype(x.dtype()));
    with_compute_type(mask.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* m = mask.data<T>();
        const T k = static_cast<T>(keep);
        for (std::size_t i = 0; i < u.size(); ++i) m[i] = u[i] < p_ ? T(0) : k;
    });
    return ag::mul(x, ag::constant(mask.to(x.dtype())));
}

}  // namespace tg::nn

namespace tg::nn {

// ---- layer normalisation -------------------------------------------------------------------

LayerNorm::LayerNorm(Shape normalized_shape, double eps, bool elementwise_affine, DType dtype)
    : shape_(std::move(normalized_shape)), eps_(eps) {
    if (shape_.empty()) fail("normalized_shape", "LayerNorm: normalized_shape is empty");
    for (std::int64_t d : shape_)
        if (d < 1) fail("normalized_shape", "LayerNorm: normalized_shape ", shape_str(shape_), " has a dim < 1");
    if (!(eps > 0)) fail("eps", "LayerNorm: eps ", eps, " must be > 0");
    if (elementwise_affine) {
        weight = register_parameter("weight", Tensor::full(shape_, 1, dtype));
        bias = register_parameter("bias", Tensor::zeros(shape_, dtype));
    }
}

Variable LayerNorm::forward(const Variable& x) {
    const int k = static_cast<int>(shape_.size()), nd = x.ndim();
    if (nd < k || !std::equal(shape_.begin(), shape_.end(), x.shape().end() - k))
        fail("input", "LayerNorm: input ", shape_str(x.shape()), " does not end with normalized_shape ", shape_str(shape_));
    std::vector<int> axes;
    for (int a = nd - k; a < nd; ++a) axes.push_back(a);
    const Variable d = ag::sub(x, ag::mean(x, axes, true));
    const Variable var = ag::mean(ag::mul(d, d), axes, true);  // biased, as PyTorch
    Variable y = ag::mul(d, ag::rsqrt(ag::affine(var, 1, eps_)));
    if (weight.defined()) y = ag::add(ag::mul(y, weight), bias);
    return y;
}

// ---- embedding -------------------------------------------------------------------------------

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t dim, std::optional<std::int64_t> padding_idx, DType dtype)
    : n_(num_embeddings), dim_(dim) {
    if (num_embeddings < 1) fail("num_embeddings", "Embedding: num_embeddings ", num_embeddings, " must be >= 1");
    if (dim < 1) fail("dim", "Embedding: dim ", dim, " must be >= 1");
    if (!is_float(dtype)) fail("dtype", "Embedding: dtype ", dtype_name(dtype), " is not a float dtype");
    if (padding_idx) {
        const std::int64_t p = *padding_idx;
        if (p < -n_ || p >= n_)
            fail("padding_idx", "Embedding: padding_idx ", p, " out of range for ", n_, " embeddings (valid: ", -n_, "..", n_ - 1, ")");
        padding_ = p < 0 ? p + n_ : p;
    }
    Tensor w = randn({n_, dim_}, dtype);
    if (padding_) w.select(0, *padding_).copy_(Tensor::zeros({dim_}, dtype));
    weight = register_parameter("weight", w);
}

Variable Embedding::forward(const Variable& indices) {
    const Tensor& idx = indices.value();
    if (idx.dtype() != DType::i32 && idx.dtype() != DType::i64)
        fail("input", "Embedding: indices must be i32 or i64, got ", dtype_name(idx.dtype()), " ", shape_str(idx.shape()));
    const Tensor flat = idx.reshape({-1}).to(DType::i64);
    const std::int64_t* p = flat.data<std::int64_t>();
    for (std::int64_t k = 0, m = flat.numel(); k < m; ++k)
        if (p[k] < 0 || p[k] >= n_)
            fail("input", "Embedding: index ", p[k], " at position ", shape_str(unravel_index(k, idx.shape())),
                 " is out of range for ", n_, " embeddings (valid: 0..", n_ - 1, ")");
    Shape out_shape = idx.shape();
    out_shape.push_back(dim_);
    Variable rows = ag::index_select(weight, 0, flat);
    if (padding_) {  // the padding row's value, with no gradient
        const Tensor pad = eq(flat, static_cast<double>(*padding_)).unsqueeze(1);
        rows = ag::where(pad, ag::constant(rows.value()), rows);
    }
    return ag::reshape(rows, out_shape);
}

// ---- activations and metrics -----------------------------------------------------------------

Variable GELU::forward(const Variable& x) { return ag::gelu(x, approximate_ == Approximate::tanh); }
Variable Softmax::forward(const Variable& x) { return ag::softmax(x, dim_); }
Variable LogSoftmax::forward(const Variable& x) { return ag::log_softmax(x, dim_); }

double accuracy(const Tensor& logits, const Tensor& labels) {
    if (!logits.defined() || !labels.defined()) fail("input", "accuracy: logits or labels undefined");
    if (logits.ndim() != 2) fail("logits", "accuracy: logits must be [N, C], got ", shape_str(logits.shape()));
    if (labels.ndim() != 1 || labels.shape()[0] != logits.shape()[0])
        fail("labels", "accuracy: labels must be [N] = [", logits.shape()[0], "], got ", shape_str(labels.shape()));
    if (labels.dtype() != DType::i32 && labels.dtype() != DType::i64)
        fail("labels", "accuracy: labels must be i32 or i64, got ", dtype_name(labels.dtype()));
    const std::int64_t n = labels.numel();
    if (n == 0) fail("labels", "accuracy: no rows (an accuracy of nothing is undefined)");
    const Tensor hits = eq(argmax(logits, 1), labels.to(DType::i64));
    return static_cast<double>(sum(hits).item()) / static_cast<double>(n);
}

}  // namespace tg::nn
