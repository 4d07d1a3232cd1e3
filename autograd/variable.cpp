#include "tapegrad/autograd/variable.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <ostream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tapegrad/autograd/ops.hpp"

namespace tg::ag {

// Where the gradient of one input goes: into the node that produced it, into a leaf that
// requires a gradient, or nowhere. Leaves are held weakly: a leaf nobody holds any more
// cannot show its gradient to anyone, and a weak edge keeps leaf -> grad -> graph -> leaf
// from becoming a reference cycle after backward(create_graph = true).
struct Edge {
    std::shared_ptr<Node> node;
    std::weak_ptr<VarImpl> leaf;
};

// A value a backward reads, with the version of its storage when it was saved.
struct SavedSlot {
    bool present = false;
    Tensor value;
    std::uint64_t version = 0;
    std::shared_ptr<Node> node;   // the saved variable's producer (non-leaf)
    std::weak_ptr<VarImpl> leaf;  // or the leaf itself
    std::string name;
};

struct Node : std::enable_shared_from_this<Node> {
    std::string op;
    std::uint64_t seq = 0;  // execution order
    std::vector<Edge> edges;
    std::vector<Shape> in_shapes;
    std::vector<DType> in_dtypes;
    std::vector<SavedSlot> saved;  // one slot per input
    bool save_output = false;
    Tensor output;
    std::uint64_t output_version = 0;
    BackwardFn fn;
    std::vector<GradHook> hooks;  // hooks of the variable this node produced
    bool released = false;

    void release() {
        fn = nullptr;
        saved.clear();
        output = Tensor();
        released = true;
    }

    // Moves the nodes this one holds into `out`, so that destroying it recurses no further.
    void take_children(std::vector<std::shared_ptr<Node>>& out) {
        for (Edge& e : edges)
            if (e.node) out.push_back(std::move(e.node));
        for (SavedSlot& s : saved)
            if (s.node) out.push_back(std::move(s.node));
    }

    // A long chain would otherwise be freed by nested destructor calls, one stack frame
    // per node: release the chain with a work list instead.
    ~Node() {
        std::vector<std::shared_ptr<Node>> stack;
        take_children(stack);
        while (!stack.empty()) {
            std::shared_ptr<Node> n = std::move(stack.back());
            stack.pop_back();
            if (n.use_count() == 1) n->take_children(stack);
        }
    }
};

struct VarImpl {
    Tensor value;
    bool requires_grad = false;
    std::string name;
    std::shared_ptr<Node> node;  // producer; null for a leaf
    Variable grad;               // accumulated (leaves)
    std::vector<GradHook> hooks;  // leaves; a non-leaf's hooks live on its node
};

namespace {

thread_local bool t_grad_enabled = true;
thread_local bool t_anomaly = false;
thread_local const std::string* t_backward_of = nullptr;  // the node whose backward runs
std::atomic<std::uint64_t> g_seq{0};

std::string describe(const std::string& name, int i) {
    return "input " + std::to_string(i) + (name.empty() ? std::string() : " ('" + name + "')");
}

const VarImpl& impl_of(const std::shared_ptr<VarImpl>& p, const char* what) {
    if (!p) fail("variable", "Variable::", what, ": the variable is undefined (a default-constructed Variable)");
    return *p;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Variable
// ---------------------------------------------------------------------------------------

Variable::Variable(Tensor value, bool requires_grad, std::string name) : impl_(std::make_shared<VarImpl>()) {
    if (!value.defined()) fail("value", "Variable: the value tensor is undefined");
    if (requires_grad && !is_float(value.dtype()))
        fail("requires_grad", "Variable", name.empty() ? "" : " '" + name + "'", ": a ", dtype_name(value.dtype()),
             " tensor cannot require a gradient");
    impl_->value = std::move(value);
    impl_->requires_grad = requires_grad;
    impl_->name = std::move(name);
}

const Tensor& Variable::value() const { return impl_of(impl_, "value").value; }
bool Variable::requires_grad() const { return impl_of(impl_, "requires_grad").requires_grad; }
bool Variable::is_leaf() const { return impl_of(impl_, "is_leaf").node == nullptr; }
const std::string& Variable::name() const { return impl_of(impl_, "name").name; }
std::string Variable::op() const { return impl_of(impl_, "op").node ? impl_->node->op : std::string(); }

Variable& Variable::set_requires_grad(bool on) {
    impl_of(impl_, "set_requires_grad");
    if (impl_->node) fail("requires_grad", "set_requires_grad: '", impl_->node->op, "' result is not a leaf");
    if (on && !is_float(impl_->value.dtype()))
        fail("requires_grad", "set_requires_grad: a ", dtype_name(impl_->value.dtype()), " tensor cannot require a gradient");
    impl_->requires_grad = on;
    return *this;
}

Variable& Variable::set_name(std::string name) {
    impl_of(impl_, "set_name");
    impl_->name = std::move(name);
    return *this;
}

bool Variable::has_grad() const { return impl_of(impl_, "has_grad").grad.defined(); }

Tensor Variable::grad() const { return grad_variable().value(); }

Variable Variable::grad_variable() const {
    const VarImpl& v = impl_of(impl_, "grad");
    if (v.grad.defined()) return v.grad;
    const std::string who = v.name.empty() ? std::string("this variable") : "'" + v.name + "'";
    const std::string what = " (" + (v.node ? "result of '" + v.node->op + "', " : std::string()) + "shape " +
                             shape_str(v.value.shape()) + ")";
    if (!v.requires_grad)
        fail("grad", who, what, " has no gradient: it does not require one (make it with param() or set_requires_grad())");
    if (v.node)
        fail("grad", who, what, " has no gradient: gradients accumulate into leaves only (use ag::grad() or a hook)");
    fail("grad", who, what, " has no gradient yet: call backward() first (check has_grad() where that is expected)");
}
void Variable::zero_grad() {
    impl_of(impl_, "zero_grad");
    impl_->grad = Variable();
}

void Variable::set_grad(const Tensor& grad) {
    const VarImpl& v = impl_of(impl_, "set_grad");
    if (!v.requires_grad) fail("grad", "set_grad: the variable does not require a gradient");
    if (!grad.defined() || grad.shape() != v.value.shape() || grad.dtype() != v.value.dtype())
        fail("grad", "set_grad: the gradient is ", grad.defined() ? std::string(dtype_name(grad.dtype())) + " " + shape_str(grad.shape()) : std::string("undefined"),
             ", the variable ", dtype_name(v.value.dtype()), " ", shape_str(v.value.shape()));
    impl_->grad = Variable(grad);
}

void Variable::set_data(Tensor value) {
    impl_of(impl_, "set_data");
    if (!is_leaf()) fail("value", "set_data: ", name().empty() ? "the variable" : "'" + name() + "'",
                         " is the result of op '", op(), "'; only a leaf's value can be replaced");
    if (!value.defined()) fail("value", "set_data: the new value is undefined");
    if (requires_grad() && !is_float(value.dtype()))
        fail("value", "set_data: a variable that requires a gradient needs a float value, got ", dtype_name(value.dtype()));
    zero_grad();
    impl_->value.bump_version();
    impl_->value = std::move(value);
}

void Variable::assign(const Tensor& src) {
    impl_of(impl_, "assign");
    Tensor& v = impl_->value;
    if (!src.defined() || src.shape() != v.shape())
        fail("value", "assign: source shape ", src.defined() ? shape_str(src.shape()) : "undefined",
             " does not match the variable's ", shape_str(v.shape()));
    const Tensor c = src.to(v.dtype()).contiguous();
    if (v.is_contiguous()) {
        std::memcpy(v.raw_data(), c.raw_data(), static_cast<std::size_t>(v.numel()) * dtype_size(v.dtype()));
    } else {
        fail("value", "assign: the variable's value is a strided view; assign to a contiguous variable");
    }
    v.bump_version();
}

Variable Variable::detach() const { return Variable(value(), false, name()); }

void Variable::register_hook(GradHook hook) {
    impl_of(impl_, "register_hook");
    if (!impl_->requires_grad)
        fail("hook", "register_hook: ", impl_->name.empty() ? std::string("the variable") : "'" + impl_->name + "'", " (shape ",
             shape_str(impl_->value.shape()), ") does not require a gradient");
    if (impl_->node) impl_->node->hooks.push_back(std::move(hook));
    else impl_->hooks.push_back(std::move(hook));
}

void Variable::backward(const Tensor& grad, bool retain_graph, bool create_graph) const {
    ag::backward({*this}, grad.defined() ? std::vector<Tensor>{grad} : std::vector<Tensor>{}, retain_graph, create_graph);
}

std::ostream& operator<<(std::ostream& os, const Variable& v) {
    if (!v.defined()) return os << "variable(undefined)";
    os << "variable(" << v.value() << ", requires_grad=" << (v.requires_grad() ? "true" : "false");
    if (!v.op().empty()) os << ", op='" << v.op() << "'";
    if (!v.name().empty()) os << ", name='" << v.name() << "'";
    if (v.has_grad()) os << ", grad=true";
    return os << ")";
}

Variable param(Tensor value, std::string name) { return Variable(std::move(value), true, std::move(name)); }
Variable constant(Tensor value, std::string name) { return Variable(std::move(value), false, std::move(name)); }

// ---------------------------------------------------------------------------------------
// Grad mode
// ---------------------------------------------------------------------------------------

bool anomaly_mode_enabled() { return t_anomaly; }
void set_detect_anomaly(bool on) { t_anomaly = on; }
AnomalyModeGuard::AnomalyModeGuard(bool enabled) : prev_(t_anomaly) { t_anomaly = enabled; }
AnomalyModeGuard::~AnomalyModeGuard() { t_anomaly = prev_; }

namespace {

// The first non-finite element of a float tensor (−1 when all are finite) and how many there are.
std::int64_t first_non_finite(const Tensor& t, std::int64_t& count, double& value) {
    count = 0;
    std::int64_t first = -1;
    const std::vector<double> v = t.values();
    for (std::size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i])) {
            if (first < 0) {
                first = static_cast<std::int64_t>(i);
                value = v[i];
            }
            ++count;
        }
    return first;
}

void check_anomaly(const std::string& op, const Tensor& y, const std::vector<Variable>& inputs) {
    if (!is_float(y.dtype())) return;
    std::int64_t count = 0;
    double value = 0;
    const std::int64_t at = first_non_finite(y, count, value);
    if (at < 0) return;
    std::ostringstream os;
    os << "anomaly mode: '" << op << "'";
    if (t_backward_of) os << " (in the backward of '" << *t_backward_of << "')";
    os << " produced " << (std::isnan(value) ? "NaN" : value > 0 ? "Inf" : "-Inf") << " at " << shape_str(unravel_index(at, y.shape()))
       << " of its result " << dtype_name(y.dtype()) << " " << shape_str(y.shape()) << " (" << count << " non-finite of "
       << y.numel() << "); inputs:";
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const Tensor& v = inputs[i].value();
        os << (i ? ", " : " ") << i;
        if (!inputs[i].name().empty()) os << " '" << inputs[i].name() << "'";
        os << " " << dtype_name(v.dtype()) << " " << shape_str(v.shape());
        std::int64_t c = 0;
        double w = 0;
        if (is_float(v.dtype()) && first_non_finite(v, c, w) >= 0) os << " (already holds " << c << " NaN/Inf)";
    }
    fail("anomaly", os.str());
}

}  // namespace

bool grad_enabled() { return t_grad_enabled; }
GradModeGuard::GradModeGuard(bool enabled) : prev_(t_grad_enabled) { t_grad_enabled = enabled; }
GradModeGuard::~GradModeGuard() { t_grad_enabled = prev_; }

// ---------------------------------------------------------------------------------------
// Recording
// ---------------------------------------------------------------------------------------

Variable record(std::string op, Tensor y, const std::vector<Variable>& inputs, Save save, BackwardFn backward) {
    bool any = false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].defined()) fail("input", op, ": input ", i, " is undefined");
        any = any || inputs[i].requires_grad();
    }
    if (t_anomaly) check_anomaly(op, y, inputs);
    if (!any || !grad_enabled()) return Variable(std::move(y));

    auto node = std::make_shared<Node>();
    node->op = std::move(op);
    node->seq = ++g_seq;
    node->edges.resize(inputs.size());
    node->saved.resize(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const std::shared_ptr<VarImpl>& in = inputs[i].impl();
        if (in->node) node->edges[i].node = in->node;
        else if (in->requires_grad) node->edges[i].leaf = in;
        node->in_shapes.push_back(in->value.shape());
        node->in_dtypes.push_back(in->value.dtype());
    }
    for (int i : save.inputs) {
        if (i < 0 || i >= static_cast<int>(inputs.size())) fail("save", node->op, ": saves input ", i, " of ", inputs.size());
        const std::shared_ptr<VarImpl>& in = inputs[static_cast<std::size_t>(i)].impl();
        SavedSlot& s = node->saved[static_cast<std::size_t>(i)];
        s.present = true;
        s.value = in->value;
        s.version = in->value.version();
        s.node = in->node;
        if (!in->node) s.leaf = in;
        s.name = in->name;
    }
    if (save.output) {
        node->save_output = true;
        node->output = y;
        node->output_version = y.version();
    }
    node->fn = std::move(backward);
    auto impl = std::make_shared<VarImpl>();
    impl->value = std::move(y);
    impl->requires_grad = true;
    impl->node = std::move(node);
    return Variable(std::move(impl));
}

Variable SavedContext::input(int i) const {
    if (i < 0 || i >= static_cast<int>(node_.saved.size()) || !node_.saved[static_cast<std::size_t>(i)].present)
        fail("save", "backward of '", node_.op, "' reads input ", i, ", which it did not save");
    const SavedSlot& s = node_.saved[static_cast<std::size_t>(i)];
    if (s.node) {
        auto impl = std::make_shared<VarImpl>();
        impl->value = s.value;
        impl->requires_grad = true;
        impl->node = s.node;
        impl->name = s.name;
        return Variable(std::move(impl));
    }
    if (auto leaf = s.leaf.lock()) return Variable(std::move(leaf));
    return Variable(s.value, false, s.name);
}

Variable SavedContext::output() const {
    if (!node_.save_output) fail("save", "backward of '", node_.op, "' reads its result, which it did not save");
    auto impl = std::make_shared<VarImpl>();
    impl->value = node_.output;
    impl->requires_grad = true;
    impl->node = const_cast<Node&>(node_).shared_from_this();
    return Variable(std::move(impl));
}

bool SavedContext::needs_grad(int i) const {
    const Edge& e = node_.edges.at(static_cast<std::size_t>(i));
    return e.node != nullptr || !e.leaf.expired();
}

const Shape& SavedContext::input_shape(int i) const { return node_.in_shapes.at(static_cast<std::size_t>(i)); }

// ---------------------------------------------------------------------------------------
// The engine
// ---------------------------------------------------------------------------------------

namespace {

void check_versions(const Node& n) {
    for (std::size_t i = 0; i < n.saved.size(); ++i) {
        const SavedSlot& s = n.saved[i];
        if (s.present && s.value.version() != s.version)
            fail("inplace", "backward of '", n.op, "': ", describe(s.name, static_cast<int>(i)),
                 " was modified in place after the op saved it (version ", s.version, " then, ", s.value.version(),
                 " now); its gradient would be wrong. Compute the op again after the modification, or modify a copy");
    }
    if (n.save_output && n.output.version() != n.output_version)
        fail("inplace", "backward of '", n.op, "': its result was modified in place after the op saved it (version ",
             n.output_version, " then, ", n.output.version(), " now); its gradient would be wrong");
}

void check_grad(const Node& n, std::size_t i, const Variable& g) {
    if (g.shape() != n.in_shapes[i])
        fail("gradient", "backward of '", n.op, "' returned a gradient of shape ", shape_str(g.shape()), " for input ", i,
             ", which has shape ", shape_str(n.in_shapes[i]));
    if (g.dtype() != n.in_dtypes[i])
        fail("gradient", "backward of '", n.op, "' returned a ", dtype_name(g.dtype()), " gradient for input ", i,
             ", which is ", dtype_name(n.in_dtypes[i]));
}

void accumulate(Variable& slot, const Variable& g) { slot = slot.defined() ? add(slot, g) : g; }

Variable run_hooks(const std::vector<GradHook>& hooks, Variable g) {
    for (const GradHook& h : hooks) {
        Variable r = h(g);
        if (r.defined()) {
            if (r.shape() != g.shape() || r.dtype() != g.dtype())
                fail("hook", "a gradient hook returned ", dtype_name(r.dtype()), " ", shape_str(r.shape()),
                     " for a gradient of ", dtype_name(g.dtype()), " ", shape_str(g.shape()));
            g = std::move(r);
        }
    }
    return g;
}

// Back-propagates from `roots`. With `inputs` it returns their gradients (ag::grad),
// otherwise it accumulates into every reachable leaf (ag::backward).
std::vector<Variable> run_engine(const std::vector<Variable>& roots, const std::vector<Variable>& seeds,
                                 const std::vector<Variable>* inputs, bool retain_graph, bool create_graph) {
    const bool retain = retain_graph || create_graph;
    GradModeGuard mode(create_graph);

    std::unordered_map<const Node*, Variable> node_grad;
    std::vector<std::shared_ptr<VarImpl>> leaves;  // in order of first arrival
    std::unordered_map<const VarImpl*, Variable> leaf_grad;
    auto to_leaf = [&](const std::shared_ptr<VarImpl>& leaf, const Variable& g) {
        auto it = leaf_grad.find(leaf.get());
        if (it == leaf_grad.end()) {
            leaves.push_back(leaf);
            leaf_grad.emplace(leaf.get(), g);
        } else {
            accumulate(it->second, g);
        }
    };

    std::vector<Node*> order;
    std::unordered_set<const Node*> seen;
    std::vector<Node*> stack;
    for (std::size_t r = 0; r < roots.size(); ++r) {
        const std::shared_ptr<VarImpl>& impl = roots[r].impl();
        if (impl->node) {
            accumulate(node_grad[impl->node.get()], seeds[r]);
            if (seen.insert(impl->node.get()).second) stack.push_back(impl->node.get());
        } else {
            to_leaf(impl, seeds[r]);
        }
    }
    while (!stack.empty()) {
        Node* n = stack.back();
        stack.pop_back();
        order.push_back(n);
        for (const Edge& e : n->edges)
            if (e.node && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
    // A node's number is larger than its inputs' producers': decreasing order is a valid
    // reverse topological order (the tape replayed backwards).
    std::sort(order.begin(), order.end(), [](const Node* a, const Node* b) { return a->seq > b->seq; });

    std::unordered_map<const Node*, std::size_t> want_node;  // non-leaf inputs of ag::grad
    std::vector<Variable> out;
    if (inputs) {
        out.resize(inputs->size());
        for (std::size_t i = 0; i < inputs->size(); ++i)
            if ((*inputs)[i].impl()->node) want_node[(*inputs)[i].impl()->node.get()] = i;
    }

    for (Node* n : order) {
        auto it = node_grad.find(n);
        if (it == node_grad.end()) continue;  // nothing flows into this op
        Variable g = std::move(it->second);
        node_grad.erase(it);
        if (n->released)
            fail("retain_graph", "backward through '", n->op,
                 "' a second time: the first backward freed the values it saved. Pass retain_graph = true to the "
                 "first backward (or to ag::grad) to back-propagate through the same graph again");
        g = run_hooks(n->hooks, std::move(g));
        if (auto w = want_node.find(n); w != want_node.end()) {
            for (std::size_t i = 0; i < inputs->size(); ++i)
                if ((*inputs)[i].impl()->node.get() == n) out[i] = g;
        }
        check_versions(*n);
        const std::string* outer = t_backward_of;
        t_backward_of = &n->op;
        struct Restore {
            const std::string* prev;
            ~Restore() { t_backward_of = prev; }
        } restore{outer};
        const Grads grads = n->fn(SavedContext(*n), g);
        if (grads.size() != n->edges.size())
            fail("gradient", "backward of '", n->op, "' returned ", grads.size(), " gradients for ", n->edges.size(),
                 " inputs");
        for (std::size_t i = 0; i < grads.size(); ++i) {
            if (!grads[i].defined()) continue;
            check_grad(*n, i, grads[i]);
            const Edge& e = n->edges[i];
            if (e.node) accumulate(node_grad[e.node.get()], grads[i]);
            else if (auto leaf = e.leaf.lock()) to_leaf(leaf, grads[i]);
        }
        if (!retain) n->release();
    }

    for (const std::shared_ptr<VarImpl>& leaf : leaves) {
        Variable g = run_hooks(leaf->hooks, leaf_grad[leaf.get()]);
        if (inputs) {
            for (std::size_t i = 0; i < inputs->size(); ++i)
                if ((*inputs)[i].impl() == leaf) out[i] = g;
        } else {
            if (!create_graph) g = g.detach();
            accumulate(leaf->grad, g);
        }
    }
    return out;
}

void check_roots(const std::vector<Variable>& roots, const char* fn) {
    if (roots.empty()) fail("roots", fn, ": no roots to back-propagate from");
    for (std::size_t r = 0; r < roots.size(); ++r) {
        if (!roots[r].defined()) fail("roots", fn, ": root ", r, " is undefined");
        if (!roots[r].requires_grad())
            fail("roots", fn, ": root ", r, " does not require a gradient (none of its inputs does, or it was computed "
                 "with grad mode off)");
    }
}

// The seed gradient of each root: given (checked against the root), or 1 for a one-element root.
std::vector<Variable> make_seeds(const std::vector<Variable>& roots, const std::vector<Variable>& given, const char* fn) {
    std::vector<Variable> seeds;
    if (given.empty()) {
        for (std::size_t r = 0; r < roots.size(); ++r) {
            if (roots[r].numel() != 1)
                fail("grads", fn, ": root ", r, " has shape ", shape_str(roots[r].shape()),
                     "; a gradient for it must be given (only one-element roots get the implicit gradient 1)");
            seeds.push_back(constant(Tensor::full(roots[r].shape(), 1.0, roots[r].dtype())));
        }
        return seeds;
    }
    if (given.size() != roots.size()) fail("grads", fn, ": ", given.size(), " gradients for ", roots.size(), " roots");
    for (std::size_t r = 0; r < roots.size(); ++r) {
        if (!given[r].defined()) fail("grads", fn, ": gradient ", r, " is undefined");
        if (given[r].shape() != roots[r].shape() || given[r].dtype() != roots[r].dtype())
            fail("grads", fn, ": gradient ", r, " is ", dtype_name(given[r].dtype()), " ", shape_str(given[r].shape()),
                 " but root ", r, " is ", dtype_name(roots[r].dtype()), " ", shape_str(roots[r].shape()));
        seeds.push_back(given[r]);
    }
    return seeds;
}

}  // namespace

void backward(const std::vector<Variable>& roots, const std::vector<Tensor>& grads, bool retain_graph, bool create_graph) {
    check_roots(roots, "backward");
    std::vector<Variable> given;
    for (const Tensor& t : grads) given.push_back(t.defined() ? constant(t) : Variable());
    run_engine(roots, make_seeds(roots, given, "backward"), nullptr, retain_graph, create_graph);
}

std::vector<Variable> grad(const std::vector<Variable>& outputs, const std::vector<Variable>& inputs,
                           const std::vector<Variable>& grad_outputs, bool retain_graph, bool create_graph) {
    check_roots(outputs, "grad");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].defined()) fail("inputs", "grad: input ", i, " is undefined");
        if (!inputs[i].requires_grad()) fail("inputs", "grad: input ", i, " does not require a gradient");
    }
    return run_engine(outputs, make_seeds(outputs, grad_outputs, "grad"), &inputs, retain_graph, create_graph);
}

}  // namespace tg::ag
