#include "tapegrad/nn/module.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <ostream>
#include <sstream>
#include <typeinfo>
#include "tapegrad/nn/layers.hpp"

#include <cmath>
#include <cstring>
#include <sstream>

#include "tapegrad/autograd/conv.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/core/random.hpp"

namespace tg::nn {

namespace {

// U(−bound, bound) from tg::default_generator() (manual_seed, or a GeneratorScope).
Tensor uniform(const Shape& shape, double bound, DType dtype) {
    std::vector<double> v(static_cast<std::size_t>(shape_numel(shape)));
    default_generator().fill_uniform(v, -bound, bound);
    return Tensor::from(shape, v, dtype);
}

ConvOptions checked(ConvOptions o, const char* layer) {
    const std::size_t D = o.kernel().size();
    if (D == 0) fail("kernel", layer, ": kernel must have at least one axis");
    for (std::int64_t k : o.kernel())
        if (k < 1) fail("kernel", layer, ": kernel size ", k, " must be >= 1");
    // Every per-axis option gets one entry per axis here, so the layers index them directly.
    o.stride(per_axis(o.stride(), Shape(D, 1), 1, true, "stride", layer));
    o.padding(per_axis(o.padding(), Shape(D, 0), 0, true, "padding", layer));
    o.dilation(per_axis(o.dilation(), Shape(D, 1), 1, true, "dilation", layer));
    o.output_padding(per_axis(o.output_padding(), Shape(D, 0), 0, true, "output_padding", layer));
    if (o.groups() < 1) fail("groups", layer, ": groups ", o.groups(), " must be >= 1");
    return o;
}

// Input [N, C, X...] of the right rank and channel count.
void check_input(const Shape& s, std::size_t D, std::int64_t C, const char* layer) {
    if (s.size() != D + 2 || s[1] != C)
        fail("input", layer, ": input ", shape_str(s), " must be [N, ", C, ", ", D, " spatial dims]");
}

// The layer's settings as the geometry constructors take them, for an input of shape s.
ConvParams params(const ConvOptions& o, const Shape& s, std::int64_t in, std::int64_t out) {
    return ConvParams{.N = s[0], .C_in = in, .C_out = out, .groups = o.groups(), .in_size = Shape(s.begin() + 2, s.end()),
                      .kernel = o.kernel(), .stride = o.stride(), .dilation = o.dilation(), .pads_begin = o.padding(),
                      .pads_end = o.padding(), .output_padding = {}, .layout = Layout::NCX};
}

std::int64_t fan(std::int64_t c, const Shape& k) { return c * shape_numel(k); }


}  // namespace

// ---- StateDict ----------------------------------------------------------------------------

StateDict::StateDict(std::initializer_list<Entry> entries) {
    for (const Entry& e : entries) insert(e.first, e.second);
}

void StateDict::insert(std::string name, Tensor value) {
    if (contains(name)) fail(name, "StateDict: key '", name, "' is already present");
    entries_.emplace_back(std::move(name), std::move(value));
}

void StateDict::set(const std::string& name, Tensor value) {
    for (Entry& e : entries_)
        if (e.first == name) {
            e.second = std::move(value);
            return;
        }
    entries_.emplace_back(name, std::move(value));
}

bool StateDict::erase(const std::string& name) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->first == name) {
            entries_.erase(it);
            return true;
        }
    return false;
}

const Tensor* StateDict::find(const std::string& name) const {
    for (const Entry& e : entries_)
        if (e.first == name) return &e.second;
    return nullptr;
}

const Tensor& StateDict::at(const std::string& name) const {
    const Tensor* t = find(name);
    if (!t) fail(name, "StateDict: no key '", name, "'");
    return *t;
}

std::vector<std::string> StateDict::keys() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_) out.push_back(e.first);
    return out;
}

StateDict StateDict::clone() const {
    StateDict out;
    for (const Entry& e : entries_) out.entries_.emplace_back(e.first, e.second.defined() ? e.second.clone() : Tensor());
    return out;
}

// ---- Module -------------------------------------------------------------------------------

namespace {

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

// Copies `src` into the storage of `dst` (same shape and dtype, checked by the caller) and
// bumps its version.
void copy_into(Tensor dst, const Tensor& src) {
    if (!dst.is_contiguous()) fail("value", "copy into a strided buffer");
    const Tensor c = src.contiguous();
    std::memcpy(dst.raw_data(), c.raw_data(), static_cast<std::size_t>(dst.numel()) * dtype_size(dst.dtype()));
    dst.bump_version();
}

// Converts a parameter's value in place, keeping the Variable (its handle is shared by the
// layer's member, the module's list and any optimizer). Variable offers no setter for its
// value, but value() is a reference to the Tensor the Variable owns (a non-const object),
// so it is replaced through that reference.
void retype(Variable& p, DType dtype) {
    if (p.dtype() != dtype) p.set_data(p.value().to(dtype));
}

}  // namespace

struct Module::Slot {
    std::string name;
    Variable* param = nullptr;  // a parameter, or
    Tensor* buffer = nullptr;   // a buffer
    const Tensor& value() const { return param ? param->value() : *buffer; }
};

void Module::check_new_name(const std::string& name, const char* what) const {
    if (name.empty() || name.find('.') != std::string::npos)
        fail(name, "register_", what, ": name '", name, "' must be non-empty and contain no '.'");
    auto taken = [&](const auto& list) {
        for (const auto& e : list)
            if (e.first == name) return true;
        return false;
    };
    if (taken(params_) || taken(buffers_) || taken(children_))
        fail(name, "register_", what, ": name '", name, "' is already taken in this module");
}

std::vector<std::pair<std::string, Variable>> Module::named_parameters() const {
    std::vector<std::pair<std::string, Variable>> all = params_;
    for (const auto& [name, child] : children_)
        for (auto& [pn, p] : child->named_parameters()) all.emplace_back(name + "." + pn, p);
    // A parameter reached twice (a layer used twice, tied weights) is listed once, under its
    // first name, as PyTorch's named_parameters(): an optimizer must update it once per step.
    std::vector<std::pair<std::string, Variable>> out;
    std::vector<const void*> seen;
    for (auto& [n, p] : all) {
        if (std::find(seen.begin(), seen.end(), p.impl().get()) != seen.end()) continue;
        seen.push_back(p.impl().get());
        out.emplace_back(std::move(n), std::move(p));
    }
    return out;
}

std::vector<Variable> Module::parameters() const {
    std::vector<Variable> out;
    for (auto& [n, p] : named_parameters()) out.push_back(p);
    return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
    std::vector<std::pair<std::string, Tensor>> out = buffers_;
    for (const auto& [name, child] : children_)
        for (auto& [bn, b] : child->named_buffers()) out.emplace_back(name + "." + bn, b);
    return out;
}

void Module::zero_grad() {
    for (Variable& p : parameters()) p.zero_grad();
}

std::int64_t Module::parameter_count() const {
    std::int64_t n = 0;
    for (const Variable& p : parameters()) n += p.numel();
    return n;
}

void Module::collect_state(const std::string& prefix, StateDict& out) const {
    for (const auto& [n, p] : params_) out.insert(prefix + n, p.value());
    for (const auto& [n, b] : buffers_) out.insert(prefix + n, b);
    for (const auto& [n, c] : children_) c->collect_state(prefix + n + ".", out);
}

StateDict Module::state_dict() const {
    StateDict out;
    collect_state("", out);
    return out;
}

void Module::collect_slots(const std::string& prefix, std::vector<Slot>& out) {
    for (auto& [n, p] : params_) out.push_back(Slot{prefix + n, &p, nullptr});
    for (auto& [n, b] : buffers_) out.push_back(Slot{prefix + n, nullptr, &b});
    for (auto& [n, c] : children_) c->collect_slots(prefix + n + ".", out);
}

LoadResult Module::load_state_dict(const StateDict& dict, bool strict) {
    std::vector<Slot> slots;
    collect_slots("", slots);
    LoadResult r;
    std::vector<std::pair<const Slot*, const Tensor*>> plan;
    std::vector<std::string> mismatched;
    for (const Slot& s : slots) {
        const Tensor* t = dict.find(s.name);
        if (!t) {
            r.missing.push_back(s.name);
            continue;
        }
        const Tensor& have = s.value();
        if (!t->defined() || t->shape() != have.shape() || t->dtype() != have.dtype()) {
            std::ostringstream os;
            os << s.name << " is ";
            if (t->defined()) os << shape_str(t->shape()) << " " << dtype_name(t->dtype());
            else os << "undefined";
            os << " in the dictionary, " << shape_str(have.shape()) << " " << dtype_name(have.dtype()) << " in the module";
            mismatched.push_back(os.str());
            continue;
        }
        plan.emplace_back(&s, t);
    }
    for (const auto& [name, t] : dict) {
        bool known = false;
        for (const Slot& s : slots) known = known || s.name == name;
        if (!known) r.unexpected.push_back(name);
    }
    if (!mismatched.empty())
        fail(mismatched.size() == 1 ? mismatched[0].substr(0, mismatched[0].find(' ')) : std::string("state_dict"),
             "load_state_dict: ", joined(mismatched));
    if (strict && (!r.missing.empty() || !r.unexpected.empty())) {
        std::ostringstream os;
        os << "load_state_dict:";
        if (!r.missing.empty()) os << " missing keys: " << joined(r.missing) << (r.unexpected.empty() ? "" : ";");
        if (!r.unexpected.empty()) os << " unexpected keys: " << joined(r.unexpected);
        fail(!r.missing.empty() ? r.missing[0] : r.unexpected[0], os.str());
    }
    for (const auto& [s, t] : plan) {
        if (s->param) s->param->assign(*t);
        else copy_into(*s->buffer, *t);
    }
    return r;
}

Module& Module::to(DType dtype) {
    if (!is_float(dtype)) fail("dtype", "Module::to: ", dtype_name(dtype), " is not a float dtype");
    for (auto& [n, p] : params_) retype(p, dtype);
    for (auto& [n, b] : buffers_)
        if (is_float(b.dtype()) && b.dtype() != dtype) {
            Tensor old = b;
            b = b.to(dtype);
            old.bump_version();
        }
    for (auto& [n, c] : children_) c->to(dtype);
    return *this;
}

Module& Module::train(bool on) {
    training_ = on;
    for (auto& [n, c] : children_) c->train(on);
    return *this;
}

Variable& Module::register_parameter(const std::string& name, Tensor value) {
    check_new_name(name, "parameter");
    params_.emplace_back(name, ag::param(std::move(value), name));
    return params_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor value) {
    check_new_name(name, "buffer");
    if (!value.defined()) fail(name, "register_buffer: buffer '", name, "' is undefined");
    buffers_.emplace_back(name, value.contiguous());
    return buffers_.back().second;
}

Tensor& Module::buffer(const std::string& name) {
    for (auto& [n, b] : buffers_)
        if (n == name) return b;
    fail(name, "Module: no buffer '", name, "'");
}

Linear::Linear(std::int64_t in, std::int64_t out, bool with_bias, DType dtype) {
    if (in < 1 || out < 1) fail("features", "Linear: in and out features must be >= 1, got ", in, " and ", out);
    const double b = 1.0 / std::sqrt(static_cast<double>(in));
    weight = register_parameter("weight", uniform({out, in}, b, dtype));
    if (with_bias) bias = register_parameter("bias", uniform({out}, b, dtype));
}

Variable Linear::forward(const Variable& x) {
    if (x.ndim() != 2 || x.shape()[1] != weight.shape()[1])
        fail("input", "Linear: input ", shape_str(x.shape()), " must be [N, ", weight.shape()[1], "]");
    return ag::linear(x, weight, bias, relu_);
}

Conv::Conv(std::int64_t in_channels, std::int64_t out_channels, ConvOptions opt)
    : in_(in_channels), out_(out_channels), opt_(checked(std::move(opt), "Conv")) {
    for (std::int64_t e : opt_.output_padding())
        if (e != 0)
            fail("output_padding", "Conv: output_padding=", shape_str(opt_.output_padding()),
                 " applies to a transposed convolution only (use ConvTranspose)");
    if (in_ < 1 || out_ < 1 || in_ % opt_.groups() || out_ % opt_.groups())
        fail("groups", "Conv: channels ", in_, " -> ", out_, " must be >= 1 and divisible by groups ", opt_.groups());
    Shape ws{out_, in_ / opt_.groups()};
    ws.insert(ws.end(), opt_.kernel().begin(), opt_.kernel().end());
    const double b = 1.0 / std::sqrt(static_cast<double>(fan(in_ / opt_.groups(), opt_.kernel())));
    weight = register_parameter("weight", uniform(ws, b, opt_.dtype()));
    if (opt_.bias()) bias = register_parameter("bias", uniform({out_}, b, opt_.dtype()));
}

ConvGeometry Conv::geometry(const Shape& s) const {
    check_input(s, opt_.kernel().size(), in_, "Conv");
    return ConvGeometry::forward(params(opt_, s, in_, out_), "Conv");
}

ConvExplanation Conv::explain(const Shape& s) const { return tg::explain(geometry(s)); }

Variable Conv::forward(const Variable& x) {
    const ConvGeometry g = geometry(x.shape());
    return ag::conv(x, ag::reshape(weight, g.weight_shape()), g, bias, relu_);
}

ConvTranspose::ConvTranspose(std::int64_t in_channels, std::int64_t out_channels, ConvOptions opt)
    : in_(in_channels), out_(out_channels), opt_(checked(std::move(opt), "ConvTranspose")) {
    if (in_ < 1 || out_ < 1 || in_ % opt_.groups() || out_ % opt_.groups())
        fail("groups", "ConvTranspose: channels ", in_, " -> ", out_, " must be >= 1 and divisible by groups ", opt_.groups());
    Shape ws{in_, out_ / opt_.groups()};
    ws.insert(ws.end(), opt_.kernel().begin(), opt_.kernel().end());
    // PyTorch's fan-in for a transposed conv weight [in, out/G, K] is (out/G)·∏K.
    const double b = 1.0 / std::sqrt(static_cast<double>(fan(out_ / opt_.groups(), opt_.kernel())));
    weight = register_parameter("weight", uniform(ws, b, opt_.dtype()));
    if (opt_.bias()) bias = register_parameter("bias", uniform({out_}, b, opt_.dtype()));
    // PyTorch's rule for the layer (the spec ops, which allow more, keep their own): an
    // output_padding of max(stride, dilation) or more would add rows no input reaches.
    for (std::size_t a = 0; a < opt_.kernel().size(); ++a) {
        const std::int64_t op = opt_.output_padding()[a], st = opt_.stride()[a], di = opt_.dilation()[a];
        if (op >= std::max(st, di))
            fail("output_padding", "ConvTranspose: output_padding ", op, " on axis ", a, " must be smaller than max(stride ", st,
                 ", dilation ", di, ") = ", std::max(st, di));
    }
}

ConvGeometry ConvTranspose::geometry(const Shape& s) const {
    check_input(s, opt_.kernel().size(), in_, "ConvTranspose");
    ConvParams p = params(opt_, s, in_, out_);
    p.output_padding = opt_.output_padding();
    return ConvGeometry::transposed(p, "ConvTranspose");
}

ConvExplanation ConvTranspose::explain(const Shape& s) const {
    return tg::explain(geometry(s), ExplainOptions{opt_.output_padding(), false});
}

Variable ConvTranspose::forward(const Variable& x) {
    const ConvGeometry g = geometry(x.shape());
    return ag::conv_transpose(x, ag::reshape(weight, g.weight_shape()), g, bias, relu_);
}

Variable Sequential::forward(const Variable& x) {
    Variable h = x;
    for (auto& l : layers_) h = l->forward(h);
    return h;
}

Variable ReLU::forward(const Variable& x) { return ag::relu(x); }
Variable LeakyReLU::forward(const Variable& x) { return ag::leaky_relu(x, slope_); }
Variable Sigmoid::forward(const Variable& x) { return ag::sigmoid(x); }
Variable Tanh::forward(const Variable& x) { return ag::tanh(x); }

Variable Flatten::forward(const Variable& x) {
    if (x.ndim() < 1) fail("input", "Flatten: input must have a batch axis");
    const std::int64_t N = x.shape()[0];
    return ag::reshape(x, {N, N == 0 ? 0 : x.numel() / N});
}

Variable Unflatten::forward(const Variable& x) {
    Shape s{x.shape().empty() ? 0 : x.shape()[0]};
    s.insert(s.end(), shape_.begin(), shape_.end());
    return ag::reshape(x, s);
}

}  // namespace tg::nn

// ---- printing -------------------------------------------------------------------------------

namespace tg::nn {

namespace {

// "[3, 3]" or, when every axis has the same value, that value alone ("3").
std::string axes(const Shape& s) {
    if (!s.empty() && std::all_of(s.begin(), s.end(), [&](std::int64_t v) { return v == s[0]; })) return std::to_string(s[0]);
    return shape_str(s);
}

std::string conv_repr(const char* name, std::int64_t in, std::int64_t out, const ConvOptions& o, bool transposed, bool relu) {
    std::ostringstream s;
    s << name << "(" << in << ", " << out << ", kernel=" << shape_str(o.kernel()) << ", stride=" << axes(o.stride())
      << ", padding=" << axes(o.padding());
    if (axes(o.dilation()) != "1") s << ", dilation=" << axes(o.dilation());
    if (transposed && axes(o.output_padding()) != "0") s << ", output_padding=" << axes(o.output_padding());
    if (o.groups() != 1) s << ", groups=" << o.groups();
    if (!o.bias()) s << ", bias=false";
    if (o.dtype() != DType::f32) s << ", dtype=" << dtype_name(o.dtype());
    if (relu) s << ", relu";
    s << ")";
    return s.str();
}

std::string pool_repr(const char* name, const PoolOptions& o) {
    std::ostringstream s;
    s << name << "(kernel=" << shape_str(o.kernel());
    if (!o.stride().empty()) s << ", stride=" << axes(o.stride());
    if (axes(o.padding()) != "0") s << ", padding=" << axes(o.padding());
    if (axes(o.dilation()) != "1") s << ", dilation=" << axes(o.dilation());
    s << ")";
    return s.str();
}

void print_tree(std::ostream& os, const Module& m, const std::string& indent) {
    os << m.repr();
    std::string params;
    for (const auto& [name, v] : m.named_parameters())
        if (name.find('.') == std::string::npos) params += (params.empty() ? "" : ", ") + name + " " + shape_str(v.shape());
    if (!params.empty()) os << "  {" << params << "}";
    if (m.named_children().empty()) return;
    os << " (\n";
    for (const auto& [name, child] : m.named_children()) {
        os << indent << "  (" << name << "): ";
        print_tree(os, *child, indent + "  ");
        os << "\n";
    }
    os << indent << ")";
}

}  // namespace

void Module::check_no_cycle(const Module& m, const std::string& name) const {
    // Depth first over m's tree (which has no cycle: every edge was checked when added).
    std::vector<const Module*> todo{&m};
    while (!todo.empty()) {
        const Module* at = todo.back();
        todo.pop_back();
        if (at == this)
            fail(name, "register_module: module '", name, "' is ", &m == this ? "this module itself" : "an ancestor of this module",
                 " (a module cannot contain itself)");
        for (const auto& [n, c] : at->children_) todo.push_back(c.get());
    }
}

std::string Module::repr() const {
    int status = 0;
    char* d = abi::__cxa_demangle(typeid(*this).name(), nullptr, nullptr, &status);
    std::string name = status == 0 && d ? d : typeid(*this).name();
    std::free(d);
    const std::size_t colon = name.rfind("::");
    return colon == std::string::npos ? name : name.substr(colon + 2);
}

std::string Linear::repr() const {
    std::ostringstream s;
    s << "Linear(" << weight.shape()[1] << ", " << weight.shape()[0] << (bias.defined() ? "" : ", bias=false");
    if (weight.dtype() != DType::f32) s << ", dtype=" << dtype_name(weight.dtype());
    s << (relu_ ? ", relu)" : ")");
    return s.str();
}
std::string Conv::repr() const { return conv_repr("Conv", in_, out_, opt_, false, relu_); }
std::string ConvTranspose::repr() const { return conv_repr("ConvTranspose", in_, out_, opt_, true, relu_); }
std::string LeakyReLU::repr() const { return "LeakyReLU(slope=" + std::to_string(slope_) + ")"; }
std::string Unflatten::repr() const { return "Unflatten(" + shape_str(shape_) + ")"; }
std::string MaxPool::repr() const { return pool_repr("MaxPool", opt_); }
std::string AvgPool::repr() const { return pool_repr("AvgPool", opt_); }
std::string BatchNorm::repr() const {
    std::ostringstream s;
    s << "BatchNorm(" << C_ << ", eps=" << eps_ << ", momentum=" << momentum_ << (relu_ ? ", relu" : "") << ")";
    return s.str();
}
std::string Dropout::repr() const {
    std::ostringstream s;
    s << "Dropout(p=" << p_ << ")";
    return s.str();
}
std::string LayerNorm::repr() const {
    std::ostringstream s;
    s << "LayerNorm(" << shape_str(shape_) << ", eps=" << eps_ << (weight.defined() ? "" : ", elementwise_affine=false") << ")";
    return s.str();
}
std::string Embedding::repr() const {
    std::ostringstream s;
    s << "Embedding(" << n_ << ", " << dim_;
    if (padding_) s << ", padding_idx=" << *padding_;
    s << ")";
    return s.str();
}
std::string GELU::repr() const { return approximate_ == Approximate::tanh ? "GELU(approximate=tanh)" : "GELU()"; }
std::string Softmax::repr() const { return "Softmax(dim=" + std::to_string(dim_) + ")"; }
std::string LogSoftmax::repr() const { return "LogSoftmax(dim=" + std::to_string(dim_) + ")"; }

std::ostream& operator<<(std::ostream& os, const Module& m) {
    print_tree(os, m, "");
    return os << "\ntotal parameters: " << m.parameter_count() << "\n";
}

}  // namespace tg::nn
