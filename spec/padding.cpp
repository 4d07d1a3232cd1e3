#include "tapegrad/spec/padding.hpp"

#include <algorithm>
#include <cctype>

#include "tapegrad/core/error.hpp"
#include "tapegrad/ops/conv_geometry.hpp"

namespace tg {

namespace {

std::string num(std::int64_t v) { return std::to_string(v); }

// The rules accept any int64 attribute, compute in 128 bits, and keep every derived
// length within the geometry's kMaxConvLength (2^62), so the kernels' index arithmetic
// (j·s + k·d − pb) cannot overflow.
using wide = __int128;
constexpr wide kLengthLimit = kMaxConvLength;

std::int64_t narrow(wide v, const char* key, const AxisParams& p, const std::string& op, const char* what) {
    if (v > kLengthLimit || v < -kLengthLimit)
        fail(key, op, ": on spatial axis ", p.axis, " ", key, " makes the ", what, " larger than 2^62");
    return static_cast<std::int64_t>(v);
}

std::int64_t effective(const AxisParams& p, const std::string& op) {
    return narrow(wide{p.d} * (p.K - 1) + 1, "dilations", p, op, "dilated kernel extent");
}

std::int64_t full_length(const AxisParams& p, std::int64_t eff, const std::string& op) {
    return narrow(wide{p.s} * (p.X - 1) + eff, "strides", p, op, "full transposed length");
}

// Forward SAME split: T = max(0, (⌈X/s⌉−1)·s + eff − X); the odd unit goes to the end for
// same_upper and to the beginning for same_lower.
void same_split(std::int64_t T, bool upper, std::int64_t& pb, std::int64_t& pe) {
    if (upper) { pb = T / 2; pe = T - pb; }
    else { pe = T / 2; pb = T - pe; }
}

}  // namespace

AutoPad parse_auto_pad(const std::string& value, const std::string& op) {
    std::string v;
    for (char c : value) v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v == "explicit" || v == "none" || v == "notset") return AutoPad::Explicit;
    if (v == "valid") return AutoPad::Valid;
    if (v == "same_upper") return AutoPad::SameUpper;
    if (v == "same_lower") return AutoPad::SameLower;
    fail("auto_pad", op, ": auto_pad '", value, "' is not one of explicit, none, notset, valid, same_upper, same_lower");
}

const char* auto_pad_name(AutoPad a) {
    switch (a) {
        case AutoPad::Explicit: return "explicit";
        case AutoPad::Valid: return "valid";
        case AutoPad::SameUpper: return "same_upper";
        case AutoPad::SameLower: return "same_lower";
    }
    return "?";
}

AxisResolution resolve_forward(const AxisParams& p, AutoPad ap, const std::string& op) {
    AxisResolution r;
    r.eff = effective(p, op);
    const std::string eff_s = "eff = " + num(p.d) + "*(" + num(p.K) + "-1)+1 = " + num(r.eff);
    if (ap == AutoPad::SameUpper || ap == AutoPad::SameLower) {
        r.out = ceil_div(p.X, p.s);
        r.total = narrow(std::max<wide>(0, wide{r.out - 1} * p.s + r.eff - p.X), "strides", p, op, "total padding");
        same_split(r.total, ap == AutoPad::SameUpper, r.pb, r.pe);
        r.rule = std::string("F ") + auto_pad_name(ap);
        r.formula = eff_s + "; Y = ceil(X/s) = ceil(" + num(p.X) + "/" + num(p.s) + ") = " + num(r.out) +
                    "; total = max(0, (Y-1)*s + eff - X) = max(0, " + num(r.out - 1) + "*" + num(p.s) + " + " +
                    num(r.eff) + " - " + num(p.X) + ") = " + num(r.total) + "; pads_begin " + num(r.pb) +
                    ", pads_end " + num(r.pe) + (ap == AutoPad::SameUpper ? " (odd unit at the end)" : " (odd unit at the beginning)");
        return r;
    }
    if (ap == AutoPad::Explicit) { r.pb = p.pads_begin; r.pe = p.pads_end; }
    const std::int64_t padded =
        narrow(wide{p.X} + r.pb + r.pe, r.pe > r.pb ? "pads_end" : "pads_begin", p, op, "padded input");
    r.total = r.pb + r.pe;
    if (padded < r.eff)
        fail("filter", op, ": on spatial axis ", p.axis, " the dilated kernel (extent ", r.eff, " = ", p.d, "*(", p.K,
             "-1)+1) is larger than the padded input (X ", p.X, " + pads_begin ", r.pb, " + pads_end ", r.pe, " = ",
             padded, ")");
    r.out = (padded - r.eff) / p.s + 1;
    r.rule = std::string("F ") + auto_pad_name(ap);
    r.formula = eff_s + "; Y = floor((X + pb + pe - eff)/s) + 1 = floor((" + num(p.X) + " + " + num(r.pb) + " + " +
                num(r.pe) + " - " + num(r.eff) + ")/" + num(p.s) + ") + 1 = " + num(r.out);
    return r;
}

AxisResolution resolve_transposed_ov(const AxisParams& p, AutoPad ap, std::optional<std::int64_t> requested,
                                     const std::string& op) {
    AxisResolution r;
    r.eff = effective(p, op);
    r.L = full_length(p, r.eff, op);
    const std::string L_s = "L = s*(X-1) + eff = " + num(p.s) + "*(" + num(p.X) + "-1) + " + num(r.eff) + " = " + num(r.L);
    const std::string op_s = num(p.output_padding);
    if (!requested) {
        if (ap == AutoPad::Explicit) {
            r.pb = p.pads_begin;
            r.pe = p.pads_end;
            r.total = narrow(wide{r.pb} + r.pe, "pads_end", p, op, "total padding");
            r.out = narrow(wide{r.L} - r.pb - r.pe + p.output_padding, "output_padding", p, op, "output");
            r.rule = "T-OV explicit";
            r.formula = L_s + "; Y = L - pb - pe + output_padding = " + num(r.L) + " - " + num(r.pb) + " - " + num(r.pe) +
                        " + " + op_s + " = " + num(r.out);
            if (r.out < 1)
                fail("pads_begin", op, ": on spatial axis ", p.axis, " the output size ", r.L, " - pads_begin ", r.pb,
                     " - pads_end ", r.pe, " + output_padding ", p.output_padding, " = ", r.out, " is < 1");
        } else {
            r.out = narrow(wide{r.L} + p.output_padding, "output_padding", p, op, "output");
            r.rule = std::string("T-OV ") + auto_pad_name(ap) + " without output_shape (pads 0)";
            r.formula = L_s + "; Y = L + output_padding = " + num(r.L) + " + " + op_s + " = " + num(r.out);
        }
        return r;
    }
    if (*requested > kLengthLimit)
        fail("output_shape", op, ": output_shape ", *requested, " on spatial axis ", p.axis, " is larger than 2^62");
    r.out = *requested;
    const std::string head = L_s + "; Y = output_shape = " + num(r.out);
    switch (ap) {
        case AutoPad::SameUpper:
        case AutoPad::SameLower: {
            r.total = narrow(std::max<wide>(0, wide{r.L} + p.output_padding - r.out), "output_padding", p, op,
                             "total padding");
            // OpenVINO puts the odd unit at the beginning for same_upper here (docs/ops.md#rule-t-ov-openvino-backprop-data-ops).
            if (ap == AutoPad::SameUpper) { r.pe = r.total / 2; r.pb = r.total - r.pe; }
            else { r.pb = r.total / 2; r.pe = r.total - r.pb; }
            r.rule = std::string("T-OV ") + auto_pad_name(ap) + " with output_shape";
            r.formula = head + "; total = max(0, L + output_padding - Y) = max(0, " + num(r.L) + " + " + op_s + " - " +
                        num(r.out) + ") = " + num(r.total) + "; pads_begin " + num(r.pb) + ", pads_end " + num(r.pe) +
                        (ap == AutoPad::SameUpper ? " (odd unit at the beginning, as OpenVINO)" : "");
            break;
        }
        case AutoPad::Explicit:
            r.pb = p.pads_begin;
            r.pe = narrow(wide{r.L} + p.output_padding - r.pb - r.out, "pads_begin", p, op, "implied pads_end");
            r.total = narrow(wide{r.pb} + r.pe, "pads_begin", p, op, "total padding");
            r.rule = "T-OV explicit with output_shape (pads_end ignored)";
            r.formula = head + "; pads_begin " + num(r.pb) + "; implied pads_end = L + output_padding - pb - Y = " + num(r.pe);
            break;
        case AutoPad::Valid:
            r.pb = 0;
            r.pe = narrow(wide{r.L} + p.output_padding - r.out, "output_padding", p, op, "implied pads_end");
            r.total = r.pe;
            r.rule = "T-OV valid with output_shape";
            r.formula = head + "; pads_begin 0; implied pads_end = L + output_padding - Y = " + num(r.pe);
            break;
    }
    if (r.pe < 0) r.formula += " (negative: positions past L are zero)";
    return r;
}

AxisResolution resolve_transposed_ct(const AxisParams& p, AutoPad ap, const std::string& op) {
    AxisResolution r;
    r.eff = effective(p, op);
    r.L = full_length(p, r.eff, op);
    if (ap == AutoPad::Explicit) { r.pb = p.pads_begin; r.pe = p.pads_end; }
    else if (ap != AutoPad::Valid) same_split(std::max<std::int64_t>(0, r.eff - p.s), ap == AutoPad::SameUpper, r.pb, r.pe);
    r.total = narrow(wide{r.pb} + r.pe, "pads_end", p, op, "total padding");
    r.out = narrow(wide{r.L} - r.pb - r.pe + p.output_padding, "output_padding", p, op, "output");
    r.rule = std::string("T-CT ") + auto_pad_name(ap);
    r.formula = "L = s*(X-1) + eff = " + num(p.s) + "*(" + num(p.X) + "-1) + " + num(r.eff) + " = " + num(r.L) +
                (ap == AutoPad::SameUpper || ap == AutoPad::SameLower
                     ? "; total = max(0, eff - s) = " + num(r.total)
                     : std::string()) +
                "; Y = L - pb - pe + output_padding = " + num(r.L) + " - " + num(r.pb) + " - " + num(r.pe) + " + " +
                num(p.output_padding) + " = " + num(r.out);
    if (r.out < 1)
        fail("pads_begin", op, ": on spatial axis ", p.axis, " the output size ", r.L, " - pads_begin ", r.pb,
             " - pads_end ", r.pe, " + output_padding ", p.output_padding, " = ", r.out, " is < 1");
    return r;
}

AxisResolution resolve_backprop_cbd(const AxisParams& p, AutoPad ap, std::int64_t Yo, const std::string& op) {
    AxisParams fp = p;
    fp.X = Yo;
    AxisResolution f;
    try {
        f = resolve_forward(fp, ap, op);
    } catch (const Error& e) {
        fail("output_shape", op, ": output_shape ", Yo, " on spatial axis ", p.axis,
             " cannot be the input of the forward convolution: ", e.what());
    }
    if (f.out != p.X)
        fail("output_shape", op, ": output_shape ", Yo, " on spatial axis ", p.axis, " maps to ", f.out,
             " under the forward convolution (pads ", f.pb, ", ", f.pe, ", stride ", p.s, "), but output_delta has size ",
             p.X);
    AxisResolution r = f;
    r.L = full_length(p, r.eff, op);
    r.out = Yo;
    r.rule = std::string("T-CBD ") + auto_pad_name(ap) + " (pads of the forward convolution on Yo)";
    r.formula = "Yo = output_shape = " + num(Yo) + "; forward on Yo: " + f.formula + " = X " + num(p.X) + " (consistent)";
    return r;
}

}  // namespace tg
