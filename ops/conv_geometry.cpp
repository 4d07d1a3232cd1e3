#include "tapegrad/ops/conv_geometry.hpp"

#include <algorithm>
#include <limits>
#include <numeric>


namespace tg {

namespace {

// The geometry takes any values here; validate() checks their ranges with the sizes.
constexpr std::int64_t kMinAny = std::numeric_limits<std::int64_t>::min();

using wide = __int128;
constexpr wide kLengthLimit = kMaxConvLength;

std::int64_t prod(const Shape& s) { return shape_numel(s, "shape"); }


// " (input [2, 8, 5, 5])": the op's input shape as the params describe it, in its layout.
std::string input_desc(const ConvParams& p) {
    Shape s{p.N};
    if (p.layout == Layout::NCX) s.push_back(p.C_in);
    s.insert(s.end(), p.in_size.begin(), p.in_size.end());
    if (p.layout == Layout::NXC) s.push_back(p.C_in);
    return " (input " + shape_str(s) + ")";
}

// The shared part of both constructors: channels, groups and the per-axis lists.
ConvGeometry base(const ConvParams& p, bool transposed, const std::string& op) {
    const std::size_t D = p.kernel.size();
    if (D == 0) fail("kernel", op, ": the kernel needs at least one spatial axis");
    if (D > static_cast<std::size_t>(kMaxSpatialAxes))
        fail("kernel", op, ": the kernel has ", D, " spatial axes, at most ", kMaxSpatialAxes, " are supported");
    if (p.in_size.size() != D)
        fail("in_size", op, ": the input has ", p.in_size.size(), " spatial axes, the kernel ", shape_str(p.kernel), " has ", D);
    if (p.N < 0) fail("N", op, ": batch size N=", p.N, " must be >= 0", input_desc(p));
    if (p.groups < 1) fail("groups", op, ": groups=", p.groups, " must be >= 1", input_desc(p));
    if (p.C_in < 1) fail("C_in", op, ": C_in=", p.C_in, " must be >= 1", input_desc(p));
    if (p.C_in % p.groups) fail("C_in", op, ": groups=", p.groups, " does not divide C_in=", p.C_in, input_desc(p));
    if (p.C_out < 1) fail("C_out", op, ": C_out=", p.C_out, " must be >= 1", input_desc(p));
    if (p.C_out % p.groups)
        fail("C_out", op, ": groups=", p.groups, " does not divide C_out=", p.C_out, input_desc(p));
    ConvGeometry g;
    g.N = p.N;
    g.G = p.groups;
    // A transposed convolution's input is the o-side of the forward convolution it inverts.
    g.Ig = (transposed ? p.C_out : p.C_in) / p.groups;
    g.Og = (transposed ? p.C_in : p.C_out) / p.groups;
    g.kernel = p.kernel;
    g.stride = per_axis(p.stride, Shape(D, 1), kMinAny, false, "stride", op);
    g.dilation = per_axis(p.dilation, Shape(D, 1), kMinAny, false, "dilation", op);
    g.pad_begin = per_axis(p.pads_begin, Shape(D, 0), kMinAny, false, "pads_begin", op);
    g.layout = p.layout;
    g.transposed_op = transposed;
    for (std::size_t a = 0; a < D; ++a) {
        if (p.kernel[a] < 1) fail("kernel", op, ": kernel[", a, "]=", p.kernel[a], " must be >= 1");
        if (g.stride[a] < 1) fail("stride", op, ": stride[", a, "]=", g.stride[a], " must be >= 1");
        if (g.dilation[a] < 1) fail("dilation", op, ": dilation[", a, "]=", g.dilation[a], " must be >= 1");
        if (g.pad_begin[a] < 0) fail("pads_begin", op, ": pads_begin[", a, "]=", g.pad_begin[a], " must be >= 0");
        if (p.in_size[a] < 1) fail("in_size", op, ": input size ", shape_str(p.in_size), " must be >= 1 on every axis");
        if (wide{g.dilation[a]} * (p.kernel[a] - 1) + 1 > kLengthLimit || g.pad_begin[a] > kLengthLimit ||
            g.stride[a] > kLengthLimit)
            fail("kernel", op, ": the lengths on spatial axis ", a, " exceed 2^62");
    }
    return g;
}

}  // namespace

ConvGeometry ConvGeometry::forward(const ConvParams& p, const std::string& op) {
    ConvGeometry g = base(p, false, op);
    const std::size_t D = g.kernel.size();
    g.pad_end = per_axis(p.pads_end, Shape(D, 0), kMinAny, false, "pads_end", op);
    if (!p.output_padding.empty()) fail("output_padding", op, ": output_padding applies to a transposed convolution only");
    g.in_size = p.in_size;
    for (std::size_t a = 0; a < D; ++a) {
        if (g.pad_end[a] < 0 || g.pad_end[a] > kLengthLimit)
            fail("pads_end", op, ": pads_end[", a, "]=", g.pad_end[a], " must be in [0, 2^62]");
        const wide span = wide{p.in_size[a]} + g.pad_begin[a] + g.pad_end[a] - g.extent(a);
        if (span < 0)
            fail("kernel", op, ": on spatial axis ", a, " the dilated kernel (", g.extent(a), ") is longer than the padded input (",
                 p.in_size[a], " + ", g.pad_begin[a], " + ", g.pad_end[a], ")");
        g.out_size.push_back(static_cast<std::int64_t>(span / g.stride[a] + 1));
    }
    g.validate(op);
    return g;
}

ConvGeometry ConvGeometry::transposed(const ConvParams& p, const std::string& op) {
    ConvGeometry g = base(p, true, op);
    const std::size_t D = g.kernel.size();
    const Shape pe = per_axis(p.pads_end, Shape(D, 0), kMinAny, false, "pads_end", op);
    const Shape opad = per_axis(p.output_padding, Shape(D, 0), kMinAny, false, "output_padding", op);
    g.out_size = p.in_size;
    for (std::size_t a = 0; a < D; ++a) {
        if (pe[a] < 0 || pe[a] > kLengthLimit) fail("pads_end", op, ": pads_end[", a, "]=", pe[a], " must be in [0, 2^62]");
        if (opad[a] < 0 || opad[a] > kLengthLimit)
            fail("output_padding", op, ": output_padding[", a, "]=", opad[a], " must be in [0, 2^62]");
        const wide Y = wide{g.stride[a]} * (p.in_size[a] - 1) + g.extent(a) - g.pad_begin[a] - pe[a] + opad[a];
        if (Y < 1)
            fail("pads_end", op, ": on spatial axis ", a, " the result size s*(X-1) + d*(K-1) + 1 - pads_begin - pads_end + output_padding = ",
                 g.stride[a], "*", p.in_size[a] - 1, " + ", g.extent(a), " - ", g.pad_begin[a], " - ", pe[a], " + ", opad[a],
                 " is < 1");
        if (Y > kLengthLimit) fail("stride", op, ": the result size on spatial axis ", a, " exceeds 2^62");
        g.in_size.push_back(static_cast<std::int64_t>(Y));
        g.pad_end.push_back(pe[a] - opad[a]);
    }
    g.validate(op);
    return g;
}

ConvGeometry ConvGeometry::transposed_to(const ConvParams& p, const Shape& result_size, const std::string& op) {
    if (!p.pads_end.empty() || !p.output_padding.empty())
        fail("pads_end", op, ": with a given result size, pads_end and output_padding are implied and must be empty");
    ConvGeometry g = base(p, true, op);
    const std::size_t D = g.kernel.size();
    if (result_size.size() != D)
        fail("output_shape", op, ": output_shape ", shape_str(result_size), " has ", result_size.size(), " entries, the kernel has ", D);
    g.out_size = p.in_size;
    for (std::size_t a = 0; a < D; ++a) {
        if (result_size[a] < 1 || result_size[a] > kLengthLimit)
            fail("output_shape", op, ": output_shape[", a, "]=", result_size[a], " must be in [1, 2^62]");
        g.in_size.push_back(result_size[a]);
        // The forward view's end padding, whatever its sign: the result may stop short of the
        // full length (cropping) or run past it (positions no input reaches are 0).
        g.pad_end.push_back(static_cast<std::int64_t>(wide{g.stride[a]} * (p.in_size[a] - 1) + g.extent(a) -
                                                      g.pad_begin[a] - result_size[a]));
    }
    g.validate(op);
    return g;
}


std::int64_t ConvGeometry::kernel_numel() const { return prod(kernel); }
std::int64_t ConvGeometry::in_numel() const { return prod(in_size); }
std::int64_t ConvGeometry::out_numel() const { return prod(out_size); }

Shape per_axis(const Shape& v, const Shape& dflt, std::int64_t min, bool broadcast, const char* key, const std::string& who) {
    const std::size_t D = dflt.size();
    if (v.empty()) return dflt;
    const Shape r = broadcast && v.size() == 1 ? Shape(D, v[0]) : v;
    if (r.size() != D) fail(key, who, ": ", key, " ", shape_str(v), " has ", v.size(), " entries for ", D, " spatial axes");
    for (std::int64_t e : r)
        if (e < min) fail(key, who, ": ", key, " value ", e, " must be >= ", min);
    return r;
}

Shape layout_shape(Layout layout, std::int64_t N, std::int64_t C, const Shape& spatial) {
    Shape s{N};
    if (layout == Layout::NCX) s.push_back(C);
    s.insert(s.end(), spatial.begin(), spatial.end());
    if (layout == Layout::NXC) s.push_back(C);
    return s;
}

Shape ConvGeometry::in_shape() const { return layout_shape(layout, N, G * Ig, in_size); }
Shape ConvGeometry::out_shape() const { return layout_shape(layout, N, G * Og, out_size); }
bool ConvGeometry::taps_disjoint() const {
    for (std::size_t a = 0; a < kernel.size(); ++a) {
        if (kernel[a] > stride[a]) return false;
        std::vector<std::int64_t> phase;
        for (std::int64_t k = 0; k < kernel[a]; ++k) phase.push_back(floor_mod(k * dilation[a] - pad_begin[a], stride[a]));
        std::sort(phase.begin(), phase.end());
        if (std::adjacent_find(phase.begin(), phase.end()) != phase.end()) return false;
    }
    return true;
}

double ConvGeometry::taps_reach() const {
    double least = 1;
    for (std::size_t a = 0; a < kernel.size(); ++a) {
        const std::int64_t s = stride[a], residues = std::min(kernel[a], s / std::gcd(dilation[a], s));
        least = std::min(least, static_cast<double>(residues) / static_cast<double>(s));
    }
    return least;
}

double ConvGeometry::taps_in_bounds() const {
    double share = 1;
    for (std::size_t a = 0; a < kernel.size(); ++a) {
        // Tap k reads i = o·s + v (v = k·d − pb), inside [0, X) for o in [⌈−v/s⌉, ⌊(X − 1 − v)/s⌋].
        const std::int64_t s = stride[a], X = in_size[a], Y = out_size[a];
        std::int64_t inside = 0;
        for (std::int64_t k = 0; k < kernel[a]; ++k) {
            const std::int64_t v = k * dilation[a] - pad_begin[a];
            const std::int64_t lo = std::max<std::int64_t>(0, ceil_div(-v, s)), hi = std::min(Y - 1, floor_div(X - 1 - v, s));
            inside += std::max<std::int64_t>(0, hi - lo + 1);
        }
        share *= static_cast<double>(inside) / (static_cast<double>(Y) * static_cast<double>(kernel[a]));
    }
    return share;
}

bool ConvGeometry::taps_cover() const {
    if (!taps_disjoint()) return false;
    for (std::size_t a = 0; a < kernel.size(); ++a) {
        // Each phase ρ < min(s, X) holds i-side positions ρ, ρ + s, .., last; the tap of that
        // phase (there is at most one) reads them from o-side positions (ρ − v)/s .. (last − v)/s.
        const std::int64_t s = stride[a], X = in_size[a], phases = std::min(s, X);
        std::int64_t covered = 0;
        for (std::int64_t k = 0; k < kernel[a]; ++k) {
            const std::int64_t v = k * dilation[a] - pad_begin[a], rho = floor_mod(v, s);
            if (rho >= phases) continue;
            const std::int64_t last = rho + (X - 1 - rho) / s * s;
            if (v <= rho && (last - v) / s < out_size[a]) ++covered;
        }
        if (covered != phases) return false;
    }
    return true;
}

double ConvGeometry::macs() const {
    double m = static_cast<double>(N) * static_cast<double>(G) * static_cast<double>(Og) * static_cast<double>(Ig);
    for (std::int64_t y : out_size) m *= static_cast<double>(y);
    for (std::int64_t k : kernel) m *= static_cast<double>(k);
    return m;
}

Shape ConvGeometry::weight_shape() const {
    Shape s{G, Og, Ig};
    s.insert(s.end(), kernel.begin(), kernel.end());
    return s;
}

void ConvGeometry::validate(const std::string& op) const {
    const std::size_t D = kernel.size();
    if (D == 0 || stride.size() != D || dilation.size() != D || pad_begin.size() != D || pad_end.size() != D ||
        in_size.size() != D || out_size.size() != D)
        fail("geometry", op, ": per-axis lists must all have the same length D >= 1 (build geometries with "
             "ConvGeometry::forward or ConvGeometry::transposed)");
    const auto counts = [&] { return " (N=" + std::to_string(N) + ", G=" + std::to_string(G) + ", Ig=" + std::to_string(Ig) +
                                     ", Og=" + std::to_string(Og) + ")"; };
    if (N < 0) fail("geometry", op, ": N=", N, " must be >= 0", counts());
    if (G < 1) fail("geometry", op, ": G=", G, " must be >= 1", counts());
    if (Ig < 1) fail("geometry", op, ": Ig=", Ig, " (input channels per group) must be >= 1", counts());
    if (Og < 1) fail("geometry", op, ": Og=", Og, " (output channels per group) must be >= 1", counts());
    for (std::size_t a = 0; a < D; ++a) {
        const auto at = [&](const char* name, const Shape& v, const char* rule) {
            fail("geometry", op, ": ", name, "[", a, "]=", v[a], " must be ", rule, " (", name, " ", shape_str(v), ")");
        };
        if (kernel[a] < 1) at("kernel", kernel, ">= 1");
        if (stride[a] < 1) at("stride", stride, ">= 1");
        if (dilation[a] < 1) at("dilation", dilation, ">= 1");
        if (pad_begin[a] < 0) at("pad_begin", pad_begin, ">= 0");
        if (in_size[a] < 1) at("in_size", in_size, ">= 1");
        if (out_size[a] < 1) at("out_size", out_size, ">= 1");
        // The kernels form j·s + k·d − pb and compare it with X: all of it must stay far
        // from the int64 limits.
        const wide far = wide{out_size[a] - 1} * stride[a] + wide{kernel[a] - 1} * dilation[a];
        if (far > kLengthLimit || wide{in_size[a]} + pad_begin[a] > kLengthLimit || pad_end[a] > kLengthLimit ||
            pad_end[a] < -kLengthLimit)
            fail("geometry", op, ": the indices on spatial axis ", a, " exceed 2^62");
        const wide span = wide{in_size[a]} + pad_begin[a] + pad_end[a] - (wide{kernel[a] - 1} * dilation[a] + 1);
        if (span < 0 || span / stride[a] + 1 != out_size[a])
            fail("geometry", op, ": on spatial axis ", a, " the size ", out_size[a], " does not follow from ", in_size[a],
                 " by floor((X + pb + pe - eff)/s) + 1 with pb ", pad_begin[a], ", pe ", pad_end[a], ", kernel ", kernel[a],
                 ", stride ", stride[a], ", dilation ", dilation[a]);
    }
    // Every tensor and the weight must have a representable element count.
    shape_numel(in_shape(), "data");
    shape_numel(out_shape(), "output");
    shape_numel(weight_shape(), "filter");
    checked_mul(R(), 1, "filter");
}

}  // namespace tg
