// More layers: pooling, batch normalisation, dropout. Each is an nn::Module (module.hpp)
// written with the differentiable ops, so gradients of any order flow through it.
//
//   nn::Sequential net{nn::Conv(1, 8, nn::ConvOptions{3, 3}.padding(1)), nn::BatchNorm(8), nn::ReLU(),
//                      nn::MaxPool(nn::PoolOptions{2, 2}), nn::Flatten(), nn::Dropout(0.5),
//                      nn::Linear(8 * 14 * 14, 10)};
//   net.train();  // batch statistics, dropout on (the default for a new module)
//   net.eval();   // running statistics, dropout off
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>

#include "tapegrad/nn/module.hpp"

namespace tg::nn {

// Per-axis settings of a pooling layer: the kernel (one size per spatial axis) in the
// constructor, the rest through chained setters; one number applies to every axis.
//   nn::PoolOptions{2, 2}                          2×2 windows, stride 2 (the kernel), no padding
//   nn::PoolOptions{3}.stride(1).padding(1)        1-D, overlapping windows
class PoolOptions {
public:
    PoolOptions(std::initializer_list<std::int64_t> kernel) : kernel_(kernel) {}
    PoolOptions(Shape kernel) : kernel_(std::move(kernel)) {}

    PoolOptions& stride(std::int64_t v) { stride_ = {v}; return *this; }
    PoolOptions& stride(Shape v) { stride_ = std::move(v); return *this; }
    PoolOptions& padding(std::int64_t v) { padding_ = {v}; return *this; }
    PoolOptions& padding(Shape v) { padding_ = std::move(v); return *this; }
    PoolOptions& dilation(std::int64_t v) { dilation_ = {v}; return *this; }
    PoolOptions& dilation(Shape v) { dilation_ = std::move(v); return *this; }

    const Shape& kernel() const { return kernel_; }
    const Shape& stride() const { return stride_; }  // empty: the kernel size
    const Shape& padding() const { return padding_; }
    const Shape& dilation() const { return dilation_; }

private:
    Shape kernel_, stride_, padding_{0}, dilation_{1};
};

// Max pooling, N-d (D = kernel rank), NCX [N, C, X...] -> [N, C, Y...] with
// Y = ⌊(X + 2·padding − dilation·(K−1) − 1)/stride⌋ + 1 (floor mode). Padding is −∞ and
// must be at most K/2 per axis, as in PyTorch. See ag::max_pool (tapegrad/autograd/pool.hpp).
class MaxPool : public Module {
public:
    explicit MaxPool(PoolOptions opt);
    Variable forward(const Variable& x) override;
    std::string repr() const override;
    ConvGeometry geometry(const Shape& input_shape) const;
    const PoolOptions& options() const { return opt_; }

private:
    PoolOptions opt_;
};

// Average pooling, N-d, NCX, the same sizes as MaxPool. Padded positions count as zeros in
// the average (each window is divided by ∏K: PyTorch's default count_include_pad = true).
// Runs as a depthwise convolution with the constant weight 1/∏K (ag::avg_pool).
class AvgPool : public Module {
public:
    explicit AvgPool(PoolOptions opt);
    Variable forward(const Variable& x) override;
    std::string repr() const override;
    ConvGeometry geometry(const Shape& input_shape) const;
    const PoolOptions& options() const { return opt_; }

private:
    PoolOptions opt_;
};

// Batch normalisation over the channel axis of [N, C] or [N, C, X...] (1-, 2-, 3-D and more):
//   y = (x − mean) / √(var + eps) · weight[c] + bias[c]
// In training mode mean and var are the batch's, per channel over N and the spatial axes
// (var biased, divided by n = N·∏X), and the running statistics are updated in place:
//   running_mean = (1 − momentum)·running_mean + momentum·mean
//   running_var  = (1 − momentum)·running_var  + momentum·var·n/(n − 1)   (unbiased)
// and num_batches_tracked grows by one, as torch.nn.BatchNorm{1,2,3}d does (n = 1 is an
// error in training mode, as there). In evaluation mode the running statistics are used
// and nothing changes. weight starts at 1, bias at 0, running_mean at 0, running_var at 1.
// State names are PyTorch's: weight, bias, running_mean, running_var, num_batches_tracked.
// dist::SyncBatchNorm (tapegrad::dist) is the same layer with statistics over every
// process's batch of a data-parallel run.
class BatchNorm : public Module {
public:
    explicit BatchNorm(std::int64_t num_features, double eps = 1e-5, double momentum = 0.1, DType dtype = DType::f32);
    Variable forward(const Variable& x) override;
    std::string repr() const override;
    BatchNorm& to(DType dtype) { Module::to(dtype); return *this; }
    // Followed by a ReLU, fused: relu(batch_norm(x)) in training as one op on the tape
    // (ag::batch_norm with relu: the ReLU costs no pass of its own, forward or backward).
    // In place of a separate nn::ReLU after the layer; the values and gradients are the same.
    BatchNorm& with_relu(bool on = true) { relu_ = on; return *this; }
    bool has_relu() const { return relu_; }
    const Tensor& running_mean() { return buffer("running_mean"); }
    const Tensor& running_var() { return buffer("running_var"); }
    std::int64_t num_batches_tracked() { return static_cast<std::int64_t>(buffer("num_batches_tracked").item()); }
    std::int64_t num_features() const { return C_; }
    double eps() const { return eps_; }
    double momentum() const { return momentum_; }
    Variable weight, bias;

protected:
    // Empty here; dist::SyncBatchNorm sets it to sum the statistics over the processes.
    std::function<Variable(const Variable&)> across_;

private:
    std::int64_t C_;
    double eps_, momentum_;
    bool relu_ = false;
};

// The batch-statistics normalisation BatchNorm computes in training mode, one fused op on the
// tape (ag::batch_norm, tapegrad/autograd/batch_norm.hpp): x [N, C, X...], weight and bias [C] (either
// may be undefined: no scale, no shift). When given, *batch_mean and *batch_var receive the
// batch mean and biased variance per channel ([C], plain tensors), and *count the number of
// values each channel's statistics span.
//
// `across`, when given, sums a per-channel partial statistic over the processes of a
// data-parallel run (differentiably; dist::all_reduce_sum): the mean and the variance are
// then those of the global batch, the union of every process's x (SyncBatchNorm), computed
// with the plain differentiable ops. With `relu`, relu of the result (fused without `across`).
Variable batch_norm_train(const Variable& x, const Variable& weight, const Variable& bias, double eps = 1e-5,
                          Tensor* batch_mean = nullptr, Tensor* batch_var = nullptr,
                          const std::function<Variable(const Variable&)>& across = {}, std::int64_t* count = nullptr,
                          bool relu = false);
// The evaluation-mode form with given statistics ([C] tensors): ag::channel_affine with the
// scale weight/√(var + eps), the shift bias and the center mean.
Variable batch_norm_eval(const Variable& x, const Tensor& mean, const Tensor& var, const Variable& weight,
                         const Variable& bias, double eps = 1e-5);

// Dropout: in training mode each element is zeroed with probability p and the others are
// scaled by 1/(1 − p), so the expected value is unchanged; the mask is drawn from
// tg::default_generator() (manual_seed or a GeneratorScope make it reproducible). In
// evaluation mode (and for p = 0) it is the identity. p = 1 zeroes everything.
class Dropout : public Module {
public:
    explicit Dropout(double p = 0.5);
    Variable forward(const Variable& x) override;
    std::string repr() const override;
    double p() const { return p_; }

private:
    double p_;
};

// Layer normalisation over the last normalized_shape.size() axes, as torch.nn.LayerNorm:
//   y = (x − mean) / √(var + eps) · weight + bias
// with mean and the biased variance over those axes of each sample; weight (ones) and bias
// (zeros) have shape normalized_shape and exist only with elementwise_affine. The input's
// trailing dims must equal normalized_shape (an error names both shapes).
class LayerNorm : public Module {
public:
    explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true, DType dtype = DType::f32);
    Variable forward(const Variable& x) override;
    std::string repr() const override;
    const Shape& normalized_shape() const { return shape_; }
    double eps() const { return eps_; }
    Variable weight, bias;  // undefined without elementwise_affine

private:
    Shape shape_;
    double eps_;
};

// A lookup table of num_embeddings vectors of size dim (weight [num_embeddings, dim],
// initialised N(0, 1) as PyTorch): forward takes a Variable holding an i32 or i64 tensor of
// indices of any shape and returns [..., dim]. padding_idx (−1: none; a negative value counts
// from the end as PyTorch) names a row that starts at zero and never receives a gradient. An
// index outside [0, num_embeddings) is an error naming the index, its position and the range.
class Embedding : public Module {
public:
    Embedding(std::int64_t num_embeddings, std::int64_t dim, std::optional<std::int64_t> padding_idx = std::nullopt,
              DType dtype = DType::f32);
    Variable forward(const Variable& indices) override;
    std::string repr() const override;
    std::int64_t num_embeddings() const { return n_; }
    std::int64_t dim() const { return dim_; }
    std::optional<std::int64_t> padding_idx() const { return padding_; }
    Variable weight;

private:
    std::int64_t n_, dim_;
    std::optional<std::int64_t> padding_;
};

// GELU, exact (x·Φ(x)) or with PyTorch's tanh approximation (ag::gelu).
class GELU : public Module {
public:
    enum class Approximate { none, tanh };
    explicit GELU(Approximate approximate = Approximate::none) : approximate_(approximate) {}
    Variable forward(const Variable& x) override;
    std::string repr() const override;
    Approximate approximate() const { return approximate_; }

private:
    Approximate approximate_;
};

// Softmax and log-softmax along one axis (negative counts from the end), as modules.
class Softmax : public Module {
public:
    explicit Softmax(int dim) : dim_(dim) {}
    Variable forward(const Variable& x) override;
    std::string repr() const override;
    int dim() const { return dim_; }

private:
    int dim_;
};

class LogSoftmax : public Module {
public:
    explicit LogSoftmax(int dim) : dim_(dim) {}
    Variable forward(const Variable& x) override;
    std::string repr() const override;
    int dim() const { return dim_; }

private:
    int dim_;
};

// The fraction of rows whose largest logit (the first, on a tie) is at the label:
// logits [N, C] (any float dtype), labels [N] of i32 or i64 class indices. An evaluation loop
// sums accuracy(...)·N over its batches. Errors name the shapes.
double accuracy(const Tensor& logits, const Tensor& labels);

}  // namespace tg::nn
