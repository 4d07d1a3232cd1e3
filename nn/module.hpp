// Layers for small models: a Module owns named parameters (ag::Variable leaves) and
// sub-modules, and maps a Variable to a Variable. Convolution layers take NCX input and
// the PyTorch weight layouts ([C_out, C_in/G, K...] for Conv, [C_in, C_out/G, K...] for
// ConvTranspose), run through the one ConvGeometry, and so share every kernel and
// gradient with the spec ops.
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg::nn {

using ag::Variable;

class Module {
public:
    virtual ~Module() = default;
    virtual Variable forward(const Variable& x) = 0;
    Variable operator()(const Variable& x) { return forward(x); }

    // Every parameter of this module and its sub-modules, named "sub.name" (depth first,
    // in registration order, so the order is stable for optimizers and checkpoints).
    std::vector<std::pair<std::string, Variable>> named_parameters() const;
    std::vector<Variable> parameters() const;
    void zero_grad();
    std::int64_t parameter_count() const;

protected:
    Variable& register_parameter(const std::string& name, Tensor value);
    template <class M>
    std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
        children_.emplace_back(name, m);
        return m;
    }

private:
    std::vector<std::pair<std::string, Variable>> params_;
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// The random source for parameter initialisation; seed it for reproducible models.
std::mt19937& init_rng();

// y = x·W + b for x [N, in]; W is [in, out], both initialised U(−1/√in, 1/√in) as PyTorch does.
class Linear : public Module {
public:
    Linear(std::int64_t in, std::int64_t out, bool bias = true, DType dtype = DType::f32);
    Variable forward(const Variable& x) override;
    Variable weight, bias;
};

// Per-axis settings of a convolution layer; a single number applies to every axis.
struct ConvOptions {
    Shape kernel;
    Shape stride{1}, padding{0}, dilation{1}, output_padding{0};
    std::int64_t groups = 1;
    bool bias = true;
    DType dtype = DType::f32;
};

// N-d convolution (D = kernel.size()), symmetric padding, NCX.
class Conv : public Module {
public:
    Conv(std::int64_t in_channels, std::int64_t out_channels, ConvOptions opt);
    Variable forward(const Variable& x) override;
    // The geometry this layer uses for an input of this shape (shape errors name the layer).
    ConvGeometry geometry(const Shape& input_shape) const;
    Variable weight, bias;

private:
    std::int64_t in_, out_;
    ConvOptions opt_;
};

// N-d transposed convolution (ConvolutionBackpropData / ConvTranspose), NCX:
// Y = s·(X−1) + d·(K−1) + 1 − 2·padding + output_padding per axis.
class ConvTranspose : public Module {
public:
    ConvTranspose(std::int64_t in_channels, std::int64_t out_channels, ConvOptions opt);
    Variable forward(const Variable& x) override;
    ConvGeometry geometry(const Shape& input_shape) const;
    Variable weight, bias;

private:
    std::int64_t in_, out_;
    ConvOptions opt_;
};

class Sequential : public Module {
public:
    Sequential() = default;
    template <class M>
    Sequential& add(std::shared_ptr<M> m) {
        layers_.push_back(register_module(std::to_string(layers_.size()), std::move(m)));
        return *this;
    }
    Variable forward(const Variable& x) override;

private:
    std::vector<std::shared_ptr<Module>> layers_;
};

// Activations and shape adapters as modules, for Sequential.
class ReLU : public Module { public: Variable forward(const Variable& x) override; };
class LeakyReLU : public Module {
public:
    explicit LeakyReLU(double slope = 0.01) : slope_(slope) {}
    Variable forward(const Variable& x) override;
private:
    double slope_;
};
class Sigmoid : public Module { public: Variable forward(const Variable& x) override; };
class Tanh : public Module { public: Variable forward(const Variable& x) override; };
// [N, ...] -> [N, ∏...]
class Flatten : public Module { public: Variable forward(const Variable& x) override; };
// [N, ∏shape] -> [N, shape...]
class Unflatten : public Module {
public:
    explicit Unflatten(Shape shape) : shape_(std::move(shape)) {}
    Variable forward(const Variable& x) override;
private:
    Shape shape_;
};

}  // namespace tg::nn
