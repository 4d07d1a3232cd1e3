#include "tapegrad/ops/conv_explain.hpp"

#include <algorithm>
#include <sstream>

#include "tapegrad/core/error.hpp"

namespace tg {

namespace {

std::string num(std::int64_t v) { return std::to_string(v); }

// Forward axis a: rule F and the outputs that see only padding.
ConvAxisExplanation forward_axis(const ConvGeometry& g, std::size_t a, std::vector<std::string>& warnings) {
    ConvAxisExplanation e;
    e.X = g.in_size[a], e.Y = g.out_size[a], e.K = g.kernel[a], e.s = g.stride[a], e.d = g.dilation[a];
    e.eff = g.extent(a), e.pb = g.pad_begin[a], e.pe = g.pad_end[a];
    e.formula = "eff = d*(K-1) + 1 = " + num(e.d) + "*(" + num(e.K) + "-1) + 1 = " + num(e.eff) +
                "; Y = floor((X + pb + pe - eff)/s) + 1 = floor((" + num(e.X) + " + " + num(e.pb) + " + " + num(e.pe) +
                " - " + num(e.eff) + ")/" + num(e.s) + ") + 1 = " + num(e.Y);
    const std::string ax = "axis " + num(static_cast<std::int64_t>(a)) + ": ";
    const std::int64_t first = e.pb >= e.eff ? std::min(e.Y, (e.pb - e.eff) / e.s + 1) : 0;
    const std::int64_t last = std::max<std::int64_t>(0, e.Y - std::max(first, ceil_div(e.X + e.pb, e.s)));
    if (first > 0)
        warnings.push_back(ax + "pads_begin " + num(e.pb) + " >= eff " + num(e.eff) + ": the first " + num(first) +
                           " output(s) see only padding (0, or the bias)");
    if (last > 0)
        warnings.push_back(ax + "pads_end " + num(e.pe) + " is so large that the last " + num(last) +
                           " output(s) see only padding (0, or the bias)");
    if (e.s > e.eff && e.Y > 1)
        warnings.push_back(ax + "stride " + num(e.s) + " > eff " + num(e.eff) + ": " + num(e.s - e.eff) + " of every " +
                           num(e.s) + " input positions are never read (their gradient is 0)");
    return e;
}

// Transposed axis a: the full length L, the size rule, and the positions no input reaches.
ConvAxisExplanation transposed_axis(const ConvGeometry& g, std::size_t a, const ExplainOptions& o,
                                    std::vector<std::string>& warnings) {
    ConvAxisExplanation e;
    e.transposed = true;
    e.X = g.out_size[a], e.Y = g.in_size[a], e.K = g.kernel[a], e.s = g.stride[a], e.d = g.dilation[a];
    e.has_op = !o.output_padding.empty();
    e.op = e.has_op ? o.output_padding[a] : 0;
    e.eff = g.extent(a), e.pb = g.pad_begin[a], e.pe = g.pad_end[a] + e.op;  // the geometry keeps pe − op
    e.L = e.s * (e.X - 1) + e.eff;
    e.formula = "eff = d*(K-1) + 1 = " + num(e.d) + "*(" + num(e.K) + "-1) + 1 = " + num(e.eff) +
                "; L = s*(X-1) + eff = " + num(e.s) + "*(" + num(e.X) + "-1) + " + num(e.eff) + " = " + num(e.L) +
                "; Y = L - pb - pe + op = " + num(e.L) + " - " + num(e.pb) + " - " + num(e.pe) + " + " + num(e.op) +
                " = " + num(e.Y);
    const std::string ax = "axis " + num(static_cast<std::int64_t>(a)) + ": ";
    if (e.has_op && e.op >= e.s)
        warnings.push_back(ax + "output_padding " + num(e.op) + " >= stride " + num(e.s) +
                           ": ONNX and PyTorch reject this (they require output_padding < stride); here it is legal and "
                           "lengthens the output by " + num(e.op));
    const std::int64_t zeros = std::min(e.Y, e.pb + e.Y - e.L);
    if (zeros > 0) {
        const std::string why = o.requested_size ? "the requested output size " + num(e.Y) + " runs past L - pb = " + num(e.L - e.pb)
                                : e.op > e.pe    ? "output_padding " + num(e.op) + " > pads_end " + num(e.pe)
                                                 : "pads_end " + num(e.pe) + " is negative";
        warnings.push_back(ax + "the last " + num(zeros) + " output position(s) (t >= L - pb = " + num(e.L - e.pb) +
                           ") lie past the full transposed length L = " + num(e.L) +
                           ": no input reaches them and they are always 0 (" + why + ")");
    }
    if (e.s > e.eff && e.X > 1)
        warnings.push_back(ax + "stride " + num(e.s) + " > eff " + num(e.eff) + ": in every " + num(e.s) +
                           " positions of the full result, " + num(e.s - e.eff) + " receive no input and are 0");
    return e;
}

}  // namespace

std::string ConvAxisExplanation::numbers() const {
    std::string s = "X " + num(X) + ", K " + num(K) + ", s " + num(this->s) + ", d " + num(d);
    if (has_op) s += ", op " + num(op);
    return s;
}

std::string ConvAxisExplanation::result() const {
    std::string r = "pads_begin " + num(pb) + ", pads_end " + num(pe);
    if (transposed) r += ", full length L " + num(L);
    return r + ", total padding " + num(pb + pe) + ", output size " + num(Y);
}

ConvExplanation explain(const ConvGeometry& g, const ExplainOptions& o) {
    if (!o.output_padding.empty() && static_cast<int>(o.output_padding.size()) != g.D())
        fail("output_padding", "explain: output_padding has ", o.output_padding.size(), " entries for ", g.D(), " spatial axes");
    if (!o.output_padding.empty() && !g.transposed_op)
        fail("output_padding", "explain: output_padding is given for a forward convolution");
    ConvExplanation e;
    e.transposed = g.transposed_op;
    e.layout = g.layout;
    e.groups = g.G;
    e.input = g.input_shape(), e.weight = g.weight_shape(), e.output = g.output_shape();
    for (std::size_t a = 0; a < static_cast<std::size_t>(g.D()); ++a)
        e.axes.push_back(g.transposed_op ? transposed_axis(g, a, o, e.warnings) : forward_axis(g, a, e.warnings));
    return e;
}

std::ostream& operator<<(std::ostream& os, const ConvExplanation& e) {
    os << (e.transposed ? "CONVT: transposed convolution" : "CONV: forward convolution") << ", layout "
       << (e.layout == Layout::NCX ? "NCX" : "NXC") << ", groups " << e.groups << "\n";
    os << "  input " << shape_str(e.input) << ", canonical W " << shape_str(e.weight) << " [G, O_g, I_g, K...]\n";
    for (std::size_t a = 0; a < e.axes.size(); ++a) {
        const ConvAxisExplanation& x = e.axes[a];
        os << "  axis " << a << ": " << x.numbers() << "\n    " << x.formula << "\n    -> " << x.result() << "\n";
    }
    os << "  output shape " << shape_str(e.output) << "\n";
    for (const std::string& w : e.warnings) os << "warning: " << w << "\n";
    return os;
}

}  // namespace tg
