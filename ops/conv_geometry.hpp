// One N-d convolution geometry for every op of the family, and the padding rules of
// OPS.md section 4 that resolve an op's attributes into it.
//
// The geometry always describes a forward convolution from the "i-side" tensor
// ([N, G·Ig, in_size...]) to the "o-side" tensor ([N, G·Og, out_size...]) with the
// canonical weight W[G, Og, Ig, K...]:
//     o[n, g·Og+o, j] = Σ_i Σ_k i_side[n, g·Ig+i, j·s + k·d − pb] · W[g, o, i, k]
// A transposed op runs the same geometry backwards (o-side in, i-side out). Only the
// resolved (pb, sizes) reach the kernels: pads_end, output_padding and auto_pad are
// consumed here.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace tg {

enum class Layout { NCX, NXC };

struct ConvGeometry {
    std::int64_t N = 0, G = 1, Ig = 0, Og = 0;
    Shape kernel, stride, dilation, pad_begin;  // one entry per spatial axis
    Shape in_size;                              // i-side spatial sizes (X)
    Shape out_size;                             // o-side spatial sizes (Y)
    Layout layout = Layout::NCX;

    int D() const { return static_cast<int>(kernel.size()); }
    std::int64_t kernel_numel() const;  // ∏K
    std::int64_t in_numel() const;      // ∏X
    std::int64_t out_numel() const;     // ∏Y = P, the number of patches
    std::int64_t R() const { return Ig * kernel_numel(); }  // reduction length
    Shape in_shape() const;      // full i-side tensor shape in `layout`
    Shape out_shape() const;     // full o-side tensor shape in `layout`
    Shape weight_shape() const;  // [G, Og, Ig, K...]
    // Checks internal consistency (every size ≥ 1 except N ≥ 0, equal lengths) and
    // that every index the kernels form fits int64.
    void validate() const;
};

// Shape of a tensor with N, C and spatial sizes in the given layout.
Shape layout_shape(Layout layout, std::int64_t N, std::int64_t C, const Shape& spatial);

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
