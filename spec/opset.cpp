#include "tapegrad/spec/opset.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <type_traits>

#include "tapegrad/autograd/conv.hpp"
#include "tapegrad/autograd/ops.hpp"

namespace tg {

// ---------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------

enum class Rule { F, T_OV, T_CT, T_CBD };
enum class Groups { One, FilterDim0, Attr };
enum class Third { None, OutputShape, Bias };
// How a stored filter becomes channel-first [A, B, K...] (A = G·Og, B = Ig); docs/ops.md#filter-layouts-and-the-canonical-view.
enum class Perm { Identity, XFirstSwapped, OldOIX, OldXIO };

struct Format {
    const char* name;
    Perm perm;
};

struct OpSpec {
    const char* opset;
    const char* op;
    Computation comp;
    Rule rule;
    std::vector<const char*> attrs;
    int min_inputs, max_inputs;
    Third third;
    Groups groups;
    int max_rank;                 // 0: no upper bound beyond the kernels' own
    const char* format_attr;      // "", "weights_format" or "filter_format"
    std::vector<Format> formats;  // the first is the default
    bool has_data_format;
    const char* data_name;
    const char* filter_name;
    // Op-local names of the filter's channel-first dims A and B, for error messages.
    const char* a_name;
    const char* b_name;
};

namespace {

const std::vector<const char*> kConvAttrs{"strides", "pads_begin", "pads_end", "dilations", "auto_pad"};
const std::vector<const char*> kBackpropAttrs{"strides", "pads_begin", "pads_end", "dilations", "auto_pad",
                                              "output_padding"};

const std::vector<OpSpec>& table() {
    static const std::vector<OpSpec> t = {
        {"openvino", "Convolution", Computation::Conv, Rule::F, kConvAttrs, 2, 2, Third::None, Groups::One, 5, "",
         {{"OIX", Perm::Identity}}, false, "data", "filter", "C_OUT", "C_IN"},
        {"openvino", "GroupConvolution", Computation::Conv, Rule::F, kConvAttrs, 2, 2, Third::None, Groups::FilterDim0,
         0, "", {{"GOIX", Perm::Identity}}, false, "data", "filter", "C_OUT", "C_IN"},
        {"openvino", "ConvolutionBackpropData", Computation::ConvT, Rule::T_OV, kBackpropAttrs, 2, 3,
         Third::OutputShape, Groups::One, 5, "", {{"IOX", Perm::Identity}}, false, "data", "filter", "C_INPUT",
         "C_OUTPUT"},
        {"openvino", "GroupConvolutionBackpropData", Computation::ConvT, Rule::T_OV, kBackpropAttrs, 2, 3,
         Third::OutputShape, Groups::FilterDim0, 0, "", {{"GIOX", Perm::Identity}}, false, "data", "filter",
         "C_INPUT", "C_OUTPUT"},
        {"onednn", "Convolution", Computation::Conv, Rule::F,
         {"strides", "pads_begin", "pads_end", "dilations", "auto_pad", "groups", "data_format", "weights_format"}, 2,
         3, Third::Bias, Groups::Attr, 0, "weights_format",
         {{"XIO", Perm::XFirstSwapped}, {"OIX", Perm::Identity}}, true, "src", "weights", "OC", "IC/groups"},
        {"onednn", "ConvTranspose", Computation::ConvT, Rule::T_CT,
         {"strides", "pads_begin", "pads_end", "dilations", "auto_pad", "output_padding", "groups", "data_format",
          "weights_format"},
         2, 3, Third::Bias, Groups::Attr, 0, "weights_format", {{"XOI", Perm::XFirstSwapped}, {"IOX", Perm::Identity}},
         true, "src", "weights", "IC", "OC/groups"},
        {"onednn", "ConvolutionBackpropData", Computation::ConvT, Rule::T_CBD,
         {"strides", "pads_begin", "pads_end", "dilations", "auto_pad", "output_padding", "groups", "data_format",
          "filter_format", "output_shape"},
         2, 3, Third::OutputShape, Groups::Attr, 0, "filter_format",
         {{"XIO", Perm::XFirstSwapped}, {"OIX", Perm::Identity}}, true, "output_delta", "filter", "out_channels",
         "in_channels/groups"},
        {"onednn", "ConvTransposeBackpropData", Computation::Conv, Rule::F,
         {"strides", "pads_begin", "pads_end", "dilations", "auto_pad", "output_padding", "groups", "data_format",
          "filter_format"},
         2, 2, Third::None, Groups::Attr, 0, "filter_format", {{"XIO", Perm::OldXIO}, {"OIX", Perm::OldOIX}}, true,
         "output_delta", "filter", "in_channels", "out_channels/groups"},
        {"onednn", "ConvTransposeBackwardData", Computation::Conv, Rule::F,
         {"strides", "pads_begin", "pads_end", "dilations", "auto_pad", "output_padding", "groups", "data_format",
          "weights_format"},
         2, 2, Third::None, Groups::Attr, 0, "weights_format", {{"XOI", Perm::XFirstSwapped}, {"IOX", Perm::Identity}},
         true, "diff_dst", "weights", "IC", "OC/groups"},
    };
    return t;
}

constexpr int kMaxSpatial = 12;  // the kernels' fixed-size index arrays

std::string upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

std::vector<int> perm_axes(Perm p, int D) {
    std::vector<int> axes;
    switch (p) {
        case Perm::Identity: return {};
        case Perm::XFirstSwapped: axes = {D + 1, D}; break;  // [K, B, A] -> [A, B, K]
        case Perm::OldXIO: axes = {D, D + 1}; break;         // [K, IC, OC/g] -> [IC, OC/g, K]
        case Perm::OldOIX: axes = {1, 0}; for (int a = 0; a < D; ++a) axes.push_back(a + 2); return axes;
    }
    for (int a = 0; a < D; ++a) axes.push_back(a);
    return axes;
}

// Typed attribute access with the checks of docs/ops.md#attributes-and-defaults.
class AttrReader {
public:
    AttrReader(const Attrs& a, std::string op, int D) : a_(a), op_(std::move(op)), D_(D) {}

    Shape ints(const char* key, std::int64_t dflt, std::int64_t min) const {
        auto it = a_.find(key);
        if (it == a_.end()) return Shape(static_cast<std::size_t>(D_), dflt);
        const auto* v = std::get_if<std::vector<std::int64_t>>(&it->second);
        if (!v) fail(key, op_, ": attribute ", key, " must be a list of ", D_, " integers");
        if (static_cast<int>(v->size()) != D_)
            fail(key, op_, ": attribute ", key, " has ", v->size(), " values ", shape_str(*v), " but the data has ", D_,
                 " spatial axes");
        for (std::size_t i = 0; i < v->size(); ++i)
            if ((*v)[i] < min)
                fail(key, op_, ": attribute ", key, "[", i, "] is ", (*v)[i], ", must be >= ", min);
        return *v;
    }
    std::optional<std::string> str(const char* key) const {
        auto it = a_.find(key);
        if (it == a_.end()) return std::nullopt;
        const auto* v = std::get_if<std::string>(&it->second);
        if (!v) fail(key, op_, ": attribute ", key, " must be a string");
        return *v;
    }
    std::int64_t integer(const char* key, std::int64_t dflt) const {
        auto it = a_.find(key);
        if (it == a_.end()) return dflt;
        const auto* v = std::get_if<std::int64_t>(&it->second);
        if (!v) fail(key, op_, ": attribute ", key, " must be an integer");
        return *v;
    }
    const AttrValue* raw(const char* key) const {
        auto it = a_.find(key);
        return it == a_.end() ? nullptr : &it->second;
    }

private:
    const Attrs& a_;
    std::string op_;
    int D_;
};

// Reads an output_shape input: 1-D, integer dtype, every value >= 1.
Shape read_shape_input(const InputInfo& t, const std::string& op) {
    if (t.dtype != DType::i32 && t.dtype != DType::i64)
        fail("output_shape", op, ": output_shape input has dtype ", dtype_name(t.dtype), ", must be i32 or i64");
    if (t.shape.size() != 1) fail("output_shape", op, ": output_shape input must be 1-D, has shape ", shape_str(t.shape));
    if (!t.values)
        fail("output_shape", op, ": the output_shape input gives only its shape ", shape_str(t.shape),
             "; its values are needed (a .npy file or {\"values\": [...]}, docs/cases.md#inputs)");
    return *t.values;
}

void check_positive(const Shape& v, const std::string& op) {
    for (std::size_t i = 0; i < v.size(); ++i)
        if (v[i] < 1) fail("output_shape", op, ": output_shape[", i, "] is ", v[i], ", must be >= 1");
}

}  // namespace

std::vector<std::string> op_names(const std::string& opset) {
    std::vector<std::string> out;
    for (const OpSpec& s : table())
        if (opset == s.opset) out.push_back(s.op);
    return out;
}

InputInfo input_info(const Tensor& t) {
    InputInfo i{t.shape(), t.dtype(), std::nullopt};
    if ((t.dtype() == DType::i32 || t.dtype() == DType::i64) && t.ndim() == 1) {
        Shape v;
        const Tensor c = t.contiguous();
        for (std::int64_t k = 0; k < c.numel(); ++k)
            v.push_back(t.dtype() == DType::i32 ? c.data<std::int32_t>()[k] : c.data<std::int64_t>()[k]);
        i.values = std::move(v);
    }
    return i;
}

ResolvedOp resolve_op(const std::string& opset, const std::string& op_name, const Attrs& attrs,
                      const std::vector<Tensor>& inputs) {
    std::vector<InputInfo> info;
    for (const Tensor& t : inputs) info.push_back(input_info(t));
    return resolve_op_info(opset, op_name, attrs, info);
}

ResolvedOp resolve_op_info(const std::string& opset, const std::string& op_name, const Attrs& attrs,
                           const std::vector<InputInfo>& inputs) {
    if (opset != "openvino" && opset != "onednn") fail("opset", "unknown opset '", opset, "' (expected openvino or onednn)");
    const OpSpec* spec = nullptr;
    for (const OpSpec& s : table())
        if (opset == s.opset && op_name == s.op) spec = &s;
    if (!spec) {
        std::string known;
        for (const auto& n : op_names(opset)) known += (known.empty() ? "" : ", ") + n;
        fail("op", "unknown op '", op_name, "' in opset ", opset, " (known: ", known, ")");
    }
    const std::string op = op_name;
    ResolvedOp r;
    r.spec = spec;
    r.name = opset + " " + op;
    r.comp = spec->comp;

    for (const auto& attr : attrs) {
        const std::string& key = attr.first;
        if (std::find_if(spec->attrs.begin(), spec->attrs.end(), [&key](const char* a) { return key == a; }) == spec->attrs.end())
            fail(key, op, ": unknown attribute '", key, "' (", opset, " ", op, " has no such attribute)");
    }
    const int n_in = static_cast<int>(inputs.size());
    if (n_in < spec->min_inputs || n_in > spec->max_inputs)
        fail("inputs", op, ": takes ", spec->min_inputs,
             spec->max_inputs != spec->min_inputs ? " or " + std::to_string(spec->max_inputs) : std::string(),
             " inputs, got ", n_in);

    const InputInfo& data = inputs[0];
    const InputInfo& filter = inputs[1];
    const std::string dn = spec->data_name, fn = spec->filter_name;
    for (int i = 0; i < 2; ++i)
        if (!is_float(inputs[i].dtype))
            fail(i == 0 ? dn : fn, op, ": ", i == 0 ? dn : fn, " has dtype ", dtype_name(inputs[i].dtype),
                 ", must be a float type");
    const int rank = static_cast<int>(data.shape.size());
    if (rank < 3) fail(dn, op, ": ", dn, " has rank ", rank, " (shape ", shape_str(data.shape), "), must be >= 3");
    if (spec->max_rank && rank > spec->max_rank)
        fail(dn, op, ": ", dn, " has rank ", rank, " (shape ", shape_str(data.shape), "), must be 3, 4 or 5");
    const int D = rank - 2;
    if (D > kMaxSpatial) fail(dn, op, ": ", dn, " has ", D, " spatial axes, more than the supported ", kMaxSpatial);
    const bool grouped_filter = spec->groups == Groups::FilterDim0;
    const int want_frank = rank + (grouped_filter ? 1 : 0);
    if (static_cast<int>(filter.shape.size()) != want_frank)
        fail(fn, op, ": ", fn, " has rank ", static_cast<int>(filter.shape.size()), " (shape ", shape_str(filter.shape), ") but ", dn,
             " has rank ", rank, ", so ", fn, " rank must be ", want_frank);

    const AttrReader A(attrs, op, D);
    const Shape strides = A.ints("strides", 1, 1);
    const Shape dilations = A.ints("dilations", 1, 1);
    const Shape pads_begin = A.ints("pads_begin", 0, 0);
    const Shape pads_end = A.ints("pads_end", 0, 0);
    const Shape output_padding = A.ints("output_padding", 0, 0);
    const AutoPad ap = parse_auto_pad(A.str("auto_pad").value_or("explicit"), op);
    std::int64_t G = 1;
    if (spec->groups == Groups::Attr) {
        G = A.integer("groups", 1);
        if (G < 1) fail("groups", op, ": groups is ", G, ", must be >= 1");
    }
    Layout layout = Layout::NCX;
    if (spec->has_data_format) {
        const std::string df = upper(A.str("data_format").value_or("NXC"));
        if (df == "NXC") layout = Layout::NXC;
        else if (df != "NCX") fail("data_format", op, ": data_format '", *A.str("data_format"), "' is not NCX or NXC");
    }
    Perm perm = spec->formats.front().perm;
    if (*spec->format_attr) {
        if (auto f = A.str(spec->format_attr)) {
            const std::string uf = upper(*f);
            auto it = std::find_if(spec->formats.begin(), spec->formats.end(), [&](const Format& x) { return uf == x.name; });
            if (it == spec->formats.end())
                fail(spec->format_attr, op, ": ", spec->format_attr, " '", *f, "' is not ", spec->formats[1].name, " or ",
                     spec->formats[0].name);
            perm = it->perm;
        }
    }

    // Data dims.
    const Shape& ds = data.shape;
    const std::int64_t N = ds[0];
    const std::int64_t C = layout == Layout::NCX ? ds[1] : ds[static_cast<std::size_t>(rank - 1)];
    Shape X(ds.begin() + (layout == Layout::NCX ? 2 : 1), ds.begin() + (layout == Layout::NCX ? rank : rank - 1));
    if (C < 1) fail(dn, op, ": ", dn, " has 0 channels (shape ", shape_str(ds), ")");
    for (int a = 0; a < D; ++a)
        if (X[a] < 1) fail(dn, op, ": ", dn, " spatial axis ", a, " has size 0 (shape ", shape_str(ds), ")");
    for (int a = 0; a < static_cast<int>(filter.shape.size()); ++a)
        if (filter.shape[a] < 1) fail(fn, op, ": ", fn, " dim ", a, " is 0 (shape ", shape_str(filter.shape), ")");

    // Filter as channel-first [A, B, K...].
    r.filter_perm = grouped_filter ? std::vector<int>{} : perm_axes(perm, D);
    Shape cf = filter.shape;
    if (!r.filter_perm.empty())
        for (int a = 0; a < rank; ++a) cf[a] = filter.shape[r.filter_perm[a]];
    std::int64_t Adim, Bdim;
    Shape K;
    if (grouped_filter) {
        G = cf[0];
        Adim = checked_mul(cf[0], cf[1], fn);
        Bdim = cf[2];
        K.assign(cf.begin() + 3, cf.end());
    } else {
        Adim = cf[0];
        Bdim = cf[1];
        K.assign(cf.begin() + 2, cf.end());
    }
    const std::string fshape = shape_str(filter.shape);
    const std::string gtxt = G > 1 || spec->groups != Groups::One ? " in " + std::to_string(G) + " groups" : "";
    std::int64_t result_C;
    if (spec->comp == Computation::Conv) {
        // data is the i-side: C = G·B; the result has A channels.
        if (C != checked_mul(G, Bdim, fn))
            fail(fn, op, ": ", fn, " ", fshape, " expects ", dn, " with ", G, "*", Bdim, " = ", G * Bdim, " channels (",
                 spec->b_name, " = ", Bdim, gtxt, ") but ", dn, " ", shape_str(ds), " has ", C);
        if (Adim % G != 0)
            fail("groups", op, ": ", spec->a_name, " = ", Adim, " (", fn, " ", fshape, ") is not divisible by groups ", G);
        result_C = Adim;
    } else {
        // data is the o-side: C = A; the result has G·B channels.
        if (C != Adim)
            fail(fn, op, ": ", fn, " ", fshape, " expects ", dn, " with ", Adim, " channels (", spec->a_name, gtxt,
                 ") but ", dn, " ", shape_str(ds), " has ", C);
        if (Adim % G != 0) fail("groups", op, ": ", dn, " channels ", C, " are not divisible by groups ", G);
        result_C = checked_mul(G, Bdim, fn);
    }

    // Padding and sizes per axis.
    std::optional<Shape> out_shape;
    if (spec->third == Third::OutputShape && n_in == 3) out_shape = read_shape_input(inputs[2], op);
    if (spec->rule == Rule::T_CBD) {
        // The input wins over the attribute, but an attribute present is still validated
        // (type, length, sign) like every other one (docs/ops.md#attributes-and-defaults).
        if (const AttrValue* v = A.raw("output_shape")) {
            const auto* list = std::get_if<std::vector<std::int64_t>>(v);
            if (!list) fail("output_shape", op, ": attribute output_shape must be a list of integers");
            if (static_cast<int>(list->size()) != rank && static_cast<int>(list->size()) != D)
                fail("output_shape", op, ": attribute output_shape ", shape_str(*list), " has ", list->size(),
                     " values, must have ", rank, " (full shape) or ", D, " (spatial only)");
            check_positive(*list, op);
            if (!out_shape) out_shape = *list;
        }
        if (!out_shape) fail("output_shape", op, ": output_shape is required, as the third input or as an attribute");
    }
    Shape Yspatial;
    if (out_shape) {
        check_positive(*out_shape, op);
        const std::int64_t len = static_cast<std::int64_t>(out_shape->size());
        if (spec->rule == Rule::T_OV) {
            if (len != D)
                fail("output_shape", op, ": output_shape ", shape_str(*out_shape), " has ", len, " values, must have ", D,
                     " (spatial only)");
            Yspatial = *out_shape;
        } else if (len == D) {
            Yspatial = *out_shape;
        } else if (len == rank) {
            const Shape& os = *out_shape;
            const std::int64_t oN = os[0], oC = layout == Layout::NCX ? os[1] : os[static_cast<std::size_t>(rank - 1)];
            if (oN != N) fail("output_shape", op, ": output_shape ", shape_str(os), " has N = ", oN, " but ", dn, " has N = ", N);
            if (oC != result_C)
                fail("output_shape", op, ": output_shape ", shape_str(os), " has ", oC, " channels but ", fn, " ", fshape,
                     " with groups ", G, " gives ", result_C);
            Yspatial.assign(os.begin() + (layout == Layout::NCX ? 2 : 1), os.begin() + (layout == Layout::NCX ? rank : rank - 1));
        } else {
            fail("output_shape", op, ": output_shape ", shape_str(*out_shape), " has ", len, " values, must have ", rank,
                 " (full shape) or ", D, " (spatial only)");
        }
    }
    if (spec->third == Third::Bias && n_in == 3) {
        const InputInfo& b = inputs[2];
        if (!is_float(b.dtype)) fail("bias", op, ": bias has dtype ", dtype_name(b.dtype), ", must be a float type");
        if (b.shape.size() != 1 || b.shape[0] != result_C)
            fail("bias", op, ": bias has shape ", shape_str(b.shape), ", must be [", result_C, "]");
        r.bias_input = 2;
        r.has_bias = true;
    }

    Shape result_spatial(D);
    r.axes.resize(D);
    for (int a = 0; a < D; ++a) {
        AxisParams p;
        p.X = X[a];
        p.K = K[a];
        p.s = strides[a];
        p.d = dilations[a];
        p.pads_begin = pads_begin[a];
        p.pads_end = pads_end[a];
        p.output_padding = output_padding[a];
        p.axis = a;
        AxisResolution ar;
        switch (spec->rule) {
            case Rule::F: ar = resolve_forward(p, ap, op); break;
            case Rule::T_OV:
                ar = resolve_transposed_ov(p, ap, out_shape ? std::optional<std::int64_t>(Yspatial[a]) : std::nullopt, op);
                break;
            case Rule::T_CT: ar = resolve_transposed_ct(p, ap, op); break;
            case Rule::T_CBD: ar = resolve_backprop_cbd(p, ap, Yspatial[a], op); break;
        }
        result_spatial[a] = ar.out;
        r.axes[a] = ar;
    }

    // The result is the only tensor not yet allocated: name an overflow of its size after
    // what set it, before the geometry calls it by its geometry side ("data" for CONVT).
    r.result_shape = layout_shape(layout, N, result_C, result_spatial);
    shape_numel(r.result_shape, out_shape ? "output_shape" : "output");
    ConvParams cp{.N = N, .C_in = C, .C_out = result_C, .groups = G, .in_size = X, .kernel = K, .stride = strides,
                  .dilation = dilations, .pads_begin = {}, .pads_end = {}, .output_padding = {}, .layout = layout};
    for (const AxisResolution& ar : r.axes) {
        cp.pads_begin.push_back(ar.pb);
        cp.pads_end.push_back(ar.pe);
    }
    if (spec->comp == Computation::Conv) {
        r.geom = ConvGeometry::forward(cp, op);
    } else {
        // Every transposed rule resolves to (pb, Y); the end padding follows from them.
        cp.pads_end.clear();
        r.geom = ConvGeometry::transposed_to(cp, result_spatial, op);
    }
    return r;
}

ag::Variable spec_op(const ResolvedOp& r, const std::vector<ag::Variable>& inputs) {
    const std::size_t need = static_cast<std::size_t>(std::max({r.data_input, r.filter_input, r.bias_input})) + 1;
    if (inputs.size() < need) fail("inputs", r.name, ": ", inputs.size(), " inputs, expects at least ", need);
    const ag::Variable& x = inputs[static_cast<std::size_t>(r.data_input)];
    const ag::Variable& filter = inputs[static_cast<std::size_t>(r.filter_input)];
    const ag::Variable f = r.filter_perm.empty() ? filter : ag::permute(filter, r.filter_perm);
    const ag::Variable W = ag::reshape(f, r.geom.weight_shape());
    const ag::Variable b = r.has_bias ? inputs[static_cast<std::size_t>(r.bias_input)] : ag::Variable();
    return r.comp == Computation::Conv ? ag::conv(x, W, r.geom, b) : ag::conv_transpose(x, W, r.geom, b);
}

Tensor run_op(const ResolvedOp& r, const std::vector<Tensor>& inputs) {
    ag::NoGradGuard no_grad;
    std::vector<ag::Variable> in;
    for (const Tensor& t : inputs) in.emplace_back(t);
    return spec_op(r, in).value();
}

OpRun run_op_with_grads(const ResolvedOp& r, const std::vector<Tensor>& inputs, const Tensor& dy) {
    if (dy.shape() != r.result_shape)
        fail("grad_output", r.name, ": grad_output has shape ", shape_str(dy.shape()), ", the result has shape ",
             shape_str(r.result_shape));
    ag::GradModeGuard grad_mode(true);
    std::vector<ag::Variable> in, wrt;
    std::vector<int> slot(inputs.size(), -1);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        // output_shape (an integer input) has no gradient.
        const bool diff = is_float(inputs[i].dtype());
        in.emplace_back(inputs[i], diff);
        if (diff) {
            slot[i] = static_cast<int>(wrt.size());
            wrt.push_back(in.back());
        }
    }
    OpRun run;
    const ag::Variable y = spec_op(r, in);
    run.result = y.value();
    const std::vector<ag::Variable> g = ag::grad({y}, wrt, {ag::constant(dy.to(y.dtype()))});
    run.grads.resize(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i)
        if (slot[i] >= 0) {
            const ag::Variable& gi = g[static_cast<std::size_t>(slot[i])];
            run.grads[i] = gi.defined() ? gi.value() : Tensor::zeros(inputs[i].shape(), inputs[i].dtype());
        }
    return run;
}

}  // namespace tg
