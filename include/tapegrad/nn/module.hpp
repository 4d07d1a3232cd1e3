// Layers for small models. A Module owns named parameters (ag::Variable leaves), buffers
// (plain Tensors such as running statistics) and sub-modules, and maps a Variable to a
// Variable. Convolution layers take NCX input and the PyTorch weight layouts ([C_out, C_in/G,
// K...] for Conv, [C_in, C_out/G, K...] for ConvTranspose), run through the one ConvGeometry,
// and so share every kernel and gradient with the spec ops. Linear is laid out as PyTorch
// lays it out too: weight [out, in], y = x·Wᵀ + b.
//
// Building a model: layers are plain values, no make_shared needed.
//
//   nn::Sequential net{nn::Conv(1, 8, nn::ConvOptions{3, 3}.stride(2).padding(1)),
//                      nn::ReLU(),
//                      nn::Flatten(),
//                      nn::Linear(8 * 14 * 14, 10)};
//   net.add<nn::Sigmoid>();                       // or construct in place: add<M>(args...)
//   net.add(std::make_shared<nn::Tanh>());        // a shared_ptr is taken as it is
//
// A module value given to Sequential (or to register_module) is moved into a shared_ptr;
// an lvalue is copied, and copies of a module share its parameters (Variables and Tensors
// are shared handles), so `nn::Linear lin(4, 2); net.add(lin);` leaves `lin` looking at the
// very weights `net` trains.
//
// Convolution settings: ConvOptions takes the kernel size per spatial axis (its length is
// the number of spatial axes D), then named setters for what differs from the defaults, in
// any order: nn::ConvOptions{3, 3}.stride(2).padding(1).output_padding(1). A single number
// applies to every axis; a list gives one value per axis.
//
// Initialisation draws from tg::default_generator(): seed it with tg::manual_seed(seed), or
// give a thread its own sequence with tg::GeneratorScope (tapegrad/core/random.hpp).
//
// Saving and restoring: state_dict() is the ordered name -> Tensor map of every parameter
// and buffer ("encoder.0.weight"), load_state_dict() copies one back (checking names,
// shapes and dtypes first, so a failed load changes nothing); tapegrad/nn/checkpoint.hpp writes it
// to disk. to(dtype) converts every parameter and float buffer in place.
#pragma once
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/ops/conv_explain.hpp"
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg::nn {

using ag::Variable;

// An ordered name -> Tensor map (insertion order), as state_dict() returns it.
class StateDict {
public:
    using Entry = std::pair<std::string, Tensor>;
    StateDict() = default;
    StateDict(std::initializer_list<Entry> entries);

    // Appends; a name already present is an error.
    void insert(std::string name, Tensor value);
    // Replaces the value under `name`, or appends it.
    void set(const std::string& name, Tensor value);
    bool erase(const std::string& name);
    bool contains(const std::string& name) const { return find(name) != nullptr; }
    const Tensor* find(const std::string& name) const;  // nullptr when absent
    const Tensor& at(const std::string& name) const;    // an error naming the key when absent
    std::vector<std::string> keys() const;
    std::size_t size() const { return entries_.size(); }
    bool empty() const { return entries_.empty(); }
    auto begin() const { return entries_.begin(); }
    auto end() const { return entries_.end(); }
    // Fresh copies of every tensor (state_dict() shares storage with the module).
    StateDict clone() const;

private:
    std::vector<Entry> entries_;
};

// What a non-strict load_state_dict() skipped.
struct LoadResult {
    std::vector<std::string> missing;     // the module's keys the dictionary lacks
    std::vector<std::string> unexpected;  // the dictionary's keys the module lacks
};

class Module {
public:
    Module() = default;
    // Copies share the parameters, buffers and sub-modules (they are handles); moves transfer them.
    Module(const Module&) = default;
    Module(Module&&) noexcept = default;
    Module& operator=(const Module&) = default;
    Module& operator=(Module&&) noexcept = default;
    virtual ~Module() = default;

    virtual Variable forward(const Variable& x) = 0;

    // How the module prints (std::cout << module): its name and options, e.g.
    // "Conv(1, 16, kernel=[3, 3], stride=[2, 2], padding=[1, 1])". The default is the class
    // name; layers with options override it.
    virtual std::string repr() const;
    // The sub-modules, in registration order.
    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
    Variable operator()(const Variable& x) { return forward(x); }

    // Every parameter of this module and its sub-modules, named "sub.name" (depth first,
    // in registration order, so the order is stable for optimizers and checkpoints).
    std::vector<std::pair<std::string, Variable>> named_parameters() const;
    std::vector<Variable> parameters() const;
    // Every buffer, named and ordered the same way.
    std::vector<std::pair<std::string, Tensor>> named_buffers() const;
    void zero_grad();
    std::int64_t parameter_count() const;

    // Per module, depth first: its parameters, then its buffers, then its sub-modules'. The
    // tensors share storage with the module (clone() the dictionary for a snapshot).
    StateDict state_dict() const;
    // Copies the dictionary's tensors into the parameters and buffers of the same names
    // (parameters get a new version, as Variable::assign does). Shapes and dtypes must match
    // exactly. With strict, a key missing from the dictionary or one the module does not
    // have is an error naming them all; without, those keys are skipped and returned.
    // Nothing is changed unless every check passes.
    LoadResult load_state_dict(const StateDict& dict, bool strict = true);

    // Converts every parameter and float buffer, here and in sub-modules, to a float dtype in
    // place: the Variables stay the same handles, so optimizers built on them keep working
    // (their state follows at the next step). Accumulated gradients
    // are dropped, and graphs recorded before are stale. Float buffers are replaced by
    // converted copies (a copy of the module made earlier keeps the old ones). Returns this module.
    Module& to(DType dtype);

    // Training or evaluation mode (a new module is in training mode). train(on) sets the
    // mode of this module and of every sub-module, depth first, and returns this module;
    // eval() is train(false). Layers that behave differently (BatchNorm, Dropout) read
    // is_training() in forward. A layer overriding train() must call Module::train.
    virtual Module& train(bool on = true);
    Module& eval() { return train(false); }
    bool is_training() const { return training_; }

protected:
    Variable& register_parameter(const std::string& name, Tensor value);
    // A buffer: state that is saved and converted with the module but not trained. Layers
    // read it through buffer(name) (to() replaces float buffers by converted ones).
    Tensor& register_buffer(const std::string& name, Tensor value);
    Tensor& buffer(const std::string& name);
    template <class M>
        requires std::derived_from<M, Module>
    std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
        check_new_name(name, "module");
        if (!m) fail(name, "register_module: module '", name, "' is null");
        check_no_cycle(*m, name);
        children_.emplace_back(name, m);
        return m;
    }
    // A module value, moved (or copied, sharing its parameters) into a shared_ptr.
    template <class M>
        requires std::derived_from<std::remove_cvref_t<M>, Module>
    std::shared_ptr<std::remove_cvref_t<M>> register_module(const std::string& name, M&& m) {
        return register_module(name, std::make_shared<std::remove_cvref_t<M>>(std::forward<M>(m)));
    }

private:
    void check_new_name(const std::string& name, const char* what) const;
    // Refuses a sub-module that is this module or holds it (a cycle would make every walk
    // over the tree, parameters() first, recurse forever).
    void check_no_cycle(const Module& m, const std::string& name) const;
    void collect_state(const std::string& prefix, StateDict& out) const;
    struct Slot;
    void collect_slots(const std::string& prefix, std::vector<Slot>& out);

    std::vector<std::pair<std::string, Variable>> params_;
    std::vector<std::pair<std::string, Tensor>> buffers_;
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
    bool training_ = true;
};

// y = x·Wᵀ + b for x [N, in], with W [out, in] and b [out] as in PyTorch, both initialised
// U(−1/√in, 1/√in).
class Linear : public Module {
public:
    Linear(std::int64_t in, std::int64_t out, bool bias = true, DType dtype = DType::f32);
    Variable forward(const Variable& x) override;
    std::string repr() const override;
    Linear& to(DType dtype) { Module::to(dtype); return *this; }
    // Followed by a ReLU, fused (ag::linear with relu; as Conv::with_relu).
    Linear& with_relu(bool on = true) { relu_ = on; return *this; }
    bool has_relu() const { return relu_; }
    Variable weight, bias;

private:
    bool relu_ = false;
};

// Per-axis settings of a convolution layer: the kernel (one size per spatial axis) in the
// constructor, the rest through setters that return the options, so they chain in any
// order. A setter given one number applies it to every axis.
//   nn::ConvOptions{3, 3}                                  2-D, 3×3, stride 1, no padding
//   nn::ConvOptions{3, 3}.stride(2).padding(1)             every axis
//   nn::ConvOptions{3, 2}.stride({2, 1}).dilation({1, 2})  per axis
//   nn::ConvOptions{4}.stride(2).padding(1).output_padding(1).bias(false).dtype(DType::f64)
class ConvOptions {
public:
    ConvOptions(std::initializer_list<std::int64_t> kernel) : kernel_(kernel) {}
    ConvOptions(Shape kernel) : kernel_(std::move(kernel)) {}

    ConvOptions& stride(std::int64_t v) { stride_ = {v}; return *this; }
    ConvOptions& stride(Shape v) { stride_ = std::move(v); return *this; }
    ConvOptions& padding(std::int64_t v) { padding_ = {v}; return *this; }
    ConvOptions& padding(Shape v) { padding_ = std::move(v); return *this; }
    ConvOptions& dilation(std::int64_t v) { dilation_ = {v}; return *this; }
    ConvOptions& dilation(Shape v) { dilation_ = std::move(v); return *this; }
    // ConvTranspose only; Conv rejects a non-zero output_padding.
    ConvOptions& output_padding(std::int64_t v) { output_padding_ = {v}; return *this; }
    ConvOptions& output_padding(Shape v) { output_padding_ = std::move(v); return *this; }
    ConvOptions& groups(std::int64_t v) { groups_ = v; return *this; }
    ConvOptions& bias(bool v) { bias_ = v; return *this; }
    ConvOptions& dtype(DType v) { dtype_ = v; return *this; }

    const Shape& kernel() const { return kernel_; }
    const Shape& stride() const { return stride_; }
    const Shape& padding() const { return padding_; }
    const Shape& dilation() const { return dilation_; }
    const Shape& output_padding() const { return output_padding_; }
    std::int64_t groups() const { return groups_; }
    bool bias() const { return bias_; }
    DType dtype() const { return dtype_; }

private:
    Shape kernel_;
    Shape stride_{1}, padding_{0}, dilation_{1}, output_padding_{0};
    std::int64_t groups_ = 1;
    bool bias_ = true;
    DType dtype_ = DType::f32;
};

// N-d convolution (D = kernel size count), symmetric padding, NCX.
class Conv : public Module {
public:
    Conv(std::int64_t in_channels, std::int64_t out_channels, ConvOptions opt);
    Variable forward(const Variable& x) override;
    std::string repr() const override;
    // The geometry this layer uses for an input of this shape (shape errors name the layer).
    ConvGeometry geometry(const Shape& input_shape) const;
    // How the output size comes about for an input of this shape: per axis the numbers,
    // the arithmetic and the warnings `tapegrad explain` prints (tapegrad/ops/conv_explain.hpp).
    ConvExplanation explain(const Shape& input_shape) const;
    Conv& to(DType dtype) { Module::to(dtype); return *this; }
    // Followed by a ReLU, fused: relu(conv(x) + bias) as one op on the tape (ag::conv with
    // relu: the ReLU is applied in the pass that adds the bias, and its gradient taken from
    // the layer's output). In place of a separate nn::ReLU after the layer; the values and
    // gradients are the same.
    Conv& with_relu(bool on = true) { relu_ = on; return *this; }
    bool has_relu() const { return relu_; }
    const ConvOptions& options() const { return opt_; }
    Variable weight, bias;

private:
    std::int64_t in_, out_;
    ConvOptions opt_;
    bool relu_ = false;
};

// N-d transposed convolution (ConvolutionBackpropData / ConvTranspose), NCX:
// Y = s·(X−1) + d·(K−1) + 1 − 2·padding + output_padding per axis.
class ConvTranspose : public Module {
public:
    ConvTranspose(std::int64_t in_channels, std::int64_t out_channels, ConvOptions opt);
    Variable forward(const Variable& x) override;
    std::string repr() const override;
    ConvGeometry geometry(const Shape& input_shape) const;
    ConvExplanation explain(const Shape& input_shape) const;  // as Conv::explain, with output_padding
    ConvTranspose& to(DType dtype) { Module::to(dtype); return *this; }
    // As Conv::with_relu: relu(conv_transpose(x) + bias), fused.
    ConvTranspose& with_relu(bool on = true) { relu_ = on; return *this; }
    bool has_relu() const { return relu_; }
    const ConvOptions& options() const { return opt_; }
    Variable weight, bias;

private:
    std::int64_t in_, out_;
    ConvOptions opt_;
    bool relu_ = false;
};

namespace detail {
template <class P>
struct is_module_ptr : std::false_type {};
template <class M>
struct is_module_ptr<std::shared_ptr<M>> : std::bool_constant<std::derived_from<M, Module>> {};
}  // namespace detail

// A module value or a shared_ptr to one: what Sequential takes.
template <class A>
concept ModuleArg = std::derived_from<std::remove_cvref_t<A>, Module> || detail::is_module_ptr<std::remove_cvref_t<A>>::value;

// Runs its layers in order; they are named "0", "1", ... in parameter and state names.
class Sequential : public Module {
public:
    Sequential() = default;
    // nn::Sequential net{nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2)}. (A single
    // Sequential argument copies or moves it, as for any class; use add() to nest one.)
    template <ModuleArg... M>
        requires(sizeof...(M) > 1 || !(std::same_as<std::remove_cvref_t<M>, Sequential> && ...))
    explicit Sequential(M&&... layers) {
        (add(std::forward<M>(layers)), ...);
    }

    template <class M>
        requires std::derived_from<M, Module>
    Sequential& add(std::shared_ptr<M> m) {
        layers_.push_back(register_module(std::to_string(layers_.size()), std::move(m)));
        return *this;
    }
    template <class M>
        requires std::derived_from<std::remove_cvref_t<M>, Module>
    Sequential& add(M&& m) {
        return add(std::make_shared<std::remove_cvref_t<M>>(std::forward<M>(m)));
    }
    // Constructs the layer in place: net.add<nn::Linear>(4, 2).
    template <class M, class... A>
        requires std::derived_from<M, Module> && std::constructible_from<M, A...> &&
                 (!(sizeof...(A) == 1 && (ModuleArg<A> && ...)))
    Sequential& add(A&&... args) {
        return add(std::make_shared<M>(std::forward<A>(args)...));
    }

    Variable forward(const Variable& x) override;
    Sequential& to(DType dtype) { Module::to(dtype); return *this; }
    std::size_t size() const { return layers_.size(); }
    const std::shared_ptr<Module>& operator[](std::size_t i) const { return layers_.at(i); }

private:
    std::vector<std::shared_ptr<Module>> layers_;
};

// Activations and shape adapters as modules, for Sequential.
class ReLU : public Module { public: Variable forward(const Variable& x) override; };
class LeakyReLU : public Module {
public:
    explicit LeakyReLU(double slope = 0.01) : slope_(slope) {}
    Variable forward(const Variable& x) override;
    std::string repr() const override;
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
    std::string repr() const override;
private:
    Shape shape_;
};

// PyTorch-like tree: each module's repr(), its own parameters' shapes, its sub-modules
// indented below it, and at the end the total parameter count.
std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace tg::nn
