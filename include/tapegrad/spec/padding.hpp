// The padding rules of the spec ops (OpenVINO, oneDNN Graph, ONNX): auto_pad, output_shape
// and output_padding resolved per spatial axis into the begin pad and the result size that
// ConvGeometry takes. docs/ops.md section "Padding and output sizes" states every rule.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace tg {

enum class AutoPad { Explicit, Valid, SameUpper, SameLower };
// Accepts explicit/none/notset, valid, same_upper, same_lower in any letter case.
AutoPad parse_auto_pad(const std::string& value, const std::string& op);
const char* auto_pad_name(AutoPad a);

// The per-axis outcome of a padding rule, with the numbers `tapegrad explain` prints.
struct AxisResolution {
    std::int64_t pb = 0, pe = 0;  // resolved pads (pe is implied when the size is given)
    std::int64_t out = 0;         // the op's result size on this axis
    std::int64_t eff = 0;         // dilated kernel extent d·(K−1)+1
    std::int64_t L = 0;           // full transposed length s·(X−1)+eff (transposed rules)
    std::int64_t total = 0;       // total padding pb + pe (before clamping, for SAME rules)
    std::string rule;             // e.g. "T-OV same_upper with output_shape"
    std::string formula;          // the arithmetic with this axis's numbers filled in
};

// Per-axis inputs of every rule. `op` names the op in error messages.
struct AxisParams {
    std::int64_t X = 0;  // the op's data-input spatial size on this axis
    std::int64_t K = 1, s = 1, d = 1;
    std::int64_t pads_begin = 0, pads_end = 0, output_padding = 0;
    int axis = 0;
};

// Rule F: a forward convolution on an input of size X.
AxisResolution resolve_forward(const AxisParams& p, AutoPad ap, const std::string& op);
// Rule T-OV: OpenVINO (Group)ConvolutionBackpropData; `requested` is output_shape[axis].
AxisResolution resolve_transposed_ov(const AxisParams& p, AutoPad ap, std::optional<std::int64_t> requested,
                                     const std::string& op);
// Rule T-CT: oneDNN ConvTranspose.
AxisResolution resolve_transposed_ct(const AxisParams& p, AutoPad ap, const std::string& op);
// Rule T-CBD: oneDNN ConvolutionBackpropData with the requested diff_src size Yo.
AxisResolution resolve_backprop_cbd(const AxisParams& p, AutoPad ap, std::int64_t Yo, const std::string& op);

}  // namespace tg
