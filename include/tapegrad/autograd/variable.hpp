// The differentiable tensor and the tape.
//
// A Variable is a shared handle on a value Tensor plus gradient state. Every differentiable
// op computes its value and, when some input requires a gradient and grad mode is on,
// records one Node: the op's name, its inputs, the values its backward reads (each with
// the version it had when saved) and the backward function, written next to the forward
// (see record() and autograd/ops.cpp). Nodes are numbered in execution order; backward()
// replays the reachable ones in reverse order of that number, with an explicit work list
// and no recursion, so a chain of 100 000 ops back-propagates (and is destroyed) without
// deepening the stack.
//
// Backward functions are themselves written with differentiable ops, so with
// create_graph = true the gradients carry a graph and can be differentiated again.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tg::ag {

struct VarImpl;
struct Node;
class Variable;

// Sees the gradient arriving at a variable (its total, once every contribution has been
// summed) and may replace it: return a defined Variable to replace, an undefined one to keep.
using GradHook = std::function<Variable(const Variable& grad)>;

class Variable {
public:
    Variable() = default;  // undefined
    // A leaf. Only float tensors may require a gradient.
    explicit Variable(Tensor value, bool requires_grad = false, std::string name = {});

    bool defined() const { return impl_ != nullptr; }
    const Tensor& value() const;
    const Shape& shape() const { return value().shape(); }
    DType dtype() const { return value().dtype(); }
    int ndim() const { return value().ndim(); }
    std::int64_t numel() const { return value().numel(); }
    double item() const { return value().item(); }

    bool requires_grad() const;
    bool is_leaf() const;  // not produced by a recorded op
    // Turns gradient tracking of a leaf on or off.
    Variable& set_requires_grad(bool on = true);
    const std::string& name() const;
    Variable& set_name(std::string name);
    // The recorded op that produced this variable ("" for a leaf).
    std::string op() const;

    // Whether backward() has accumulated a gradient into this leaf (since the last zero_grad).
    bool has_grad() const;
    // The gradient accumulated by backward() into this leaf. Without one (no backward yet,
    // after zero_grad(), or the variable does not require a gradient) it throws an Error
    // (key "grad") saying so; ask has_grad() first where that is expected.
    Tensor grad() const;
    // The same as a Variable: after backward(create_graph = true) it carries a graph.
    // Throws as grad() does.
    Variable grad_variable() const;
    void zero_grad();  // forgets the accumulated gradient
    // Replaces the accumulated gradient of a variable that requires one by `grad` (same shape
    // and dtype; kept as it is, no graph), e.g. a clipped gradient (nn::clip_grad_norm).
    void set_grad(const Tensor& grad);

    // Copies `src` into the value in place (converting the dtype) and bumps its version:
    // the way an optimizer updates a parameter. Values saved for a pending backward
    // become stale, and that backward will say so.
    void assign(const Tensor& src);

    // Replaces the value of a leaf by another tensor (any shape or dtype; like PyTorch's
    // `.data =`), e.g. to convert a parameter's dtype. The accumulated gradient is dropped
    // and the old value's version bumped, so graphs that saved it report it stale.
    void set_data(Tensor value);

    // A new leaf with the same value (same storage) and no history.
    Variable detach() const;

    void register_hook(GradHook hook);

    // Shorthand for ag::backward({*this}, {grad}, ...).
    void backward(const Tensor& grad = {}, bool retain_graph = false, bool create_graph = false) const;

    bool same(const Variable& other) const { return impl_ == other.impl_; }
    const std::shared_ptr<VarImpl>& impl() const { return impl_; }
    explicit Variable(std::shared_ptr<VarImpl> impl) : impl_(std::move(impl)) {}

private:
    std::shared_ptr<VarImpl> impl_;
};

// Prints the value as the Tensor operator<< does, then the variable's state:
//   variable(tensor([1., 2.], shape=[2], dtype=f32), requires_grad=true, name='w')
// (plus op='add' for a recorded result, grad=true once it has a gradient; an undefined
// Variable prints as "variable(undefined)").
std::ostream& operator<<(std::ostream& os, const Variable& v);

// A leaf that requires a gradient (a parameter) and one that does not (data, labels).
Variable param(Tensor value, std::string name = {});
Variable constant(Tensor value, std::string name = {});

// Back-propagates from `roots`. `grads` holds one upstream gradient per root, shaped like
// it; it may be empty when every root has one element (the gradient is then 1). Leaf
// gradients accumulate into Variable::grad(). The graph's saved values are freed unless
// retain_graph (a second backward through a freed graph is an error that says so).
// create_graph records the backward computation itself, so gradients can be
// differentiated again; it implies retain_graph.
void backward(const std::vector<Variable>& roots, const std::vector<Tensor>& grads = {}, bool retain_graph = false,
              bool create_graph = false);

// The gradients of `outputs` (weighted by `grad_outputs`, default 1 for one-element outputs)
// with respect to `inputs`, returned rather than accumulated (like torch.autograd.grad).
// An input the outputs do not depend on gets an undefined Variable.
std::vector<Variable> grad(const std::vector<Variable>& outputs, const std::vector<Variable>& inputs,
                           const std::vector<Variable>& grad_outputs = {}, bool retain_graph = false,
                           bool create_graph = false);

// Grad mode is thread-local. While it is off, ops record nothing.
bool grad_enabled();
class GradModeGuard {
public:
    explicit GradModeGuard(bool enabled);
    ~GradModeGuard();
    GradModeGuard(const GradModeGuard&) = delete;
    GradModeGuard& operator=(const GradModeGuard&) = delete;

private:
    bool prev_;
};
struct NoGradGuard : GradModeGuard {
    NoGradGuard() : GradModeGuard(false) {}
};

// Anomaly detection, thread-local and off by default (it costs a pass over every result).
// While on, every recorded op, in forward and in backward, checks the float value it
// produced for NaN and ±Inf and throws an Error (key "anomaly") naming the op, the first bad
// element, and its inputs' dtypes and shapes (and whether they held NaN/Inf already), so the
// first op that produced a non-finite value is the one reported.
//   { ag::AnomalyModeGuard anomaly; loss = model(x); loss.backward(); }
bool anomaly_mode_enabled();
void set_detect_anomaly(bool on);
class AnomalyModeGuard {
public:
    explicit AnomalyModeGuard(bool enabled = true);
    ~AnomalyModeGuard();
    AnomalyModeGuard(const AnomalyModeGuard&) = delete;
    AnomalyModeGuard& operator=(const AnomalyModeGuard&) = delete;

private:
    bool prev_;
};

// ---------------------------------------------------------------------------------------
// For op authors
// ---------------------------------------------------------------------------------------

// What a backward function may read. input(i) and output() are checked against the
// versions saved at forward time: a value modified in place since then is an error.
class SavedContext {
public:
    explicit SavedContext(const Node& node) : node_(node) {}
    Variable input(int i) const;  // only inputs listed in Save::inputs
    Variable output() const;      // only with Save::output; carries this op's node
    bool needs_grad(int i) const;  // does input i lead to anything that wants a gradient?
    const Shape& input_shape(int i) const;

private:
    const Node& node_;
};

using Grads = std::vector<Variable>;  // one per input; undefined = no gradient
using BackwardFn = std::function<Grads(const SavedContext& ctx, const Variable& grad)>;

struct Save {
    std::vector<int> inputs;  // inputs the backward reads
    bool output = false;      // whether it reads the op's result
};

// Records y = op(inputs) and returns y as a Variable. Every differentiable op calls this
// right after computing its forward value. `backward` maps the gradient of y to one
// gradient per input; the engine checks each against its input's shape and dtype. It must
// read Variables only through ctx (capturing plain values, shapes or Tensors is fine):
// that keeps the graph free of hidden references and cycles.
Variable record(std::string op, Tensor y, const std::vector<Variable>& inputs, Save save, BackwardFn backward);

}  // namespace tg::ag
