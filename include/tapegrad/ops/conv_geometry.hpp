// One N-d convolution geometry for every op of the family, built by two constructors that
// apply the size rules and validate (ConvGeometry::forward, ConvGeometry::transposed).
//
// The geometry always describes a forward convolution from the "i-side" tensor
// ([N, G·Ig, in_size...]) to the "o-side" tensor ([N, G·Og, out_size...]) with the
// canonical weight W[G, Og, Ig, K...]:
//     o[n, g·Og+o, j] = Σ_i Σ_k i_side[n, g·Ig+i, j·s + k·d − pb] · W[g, o, i, k]
// A transposed op runs the same geometry backwards (o-side in, i-side out). Only pb and
// the sizes reach the kernels; pad_end is kept so validate() can check the sizes against
// the rule. The spec ops' auto_pad and output_shape rules live above, in tapegrad/spec/padding.hpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tg {

enum class Layout { NCX, NXC };

// Integer division rounding down / up, and the remainder of rounding down, for any sign of a and b > 0.
inline std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - (a % b != 0 && a < 0); }
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }
inline std::int64_t floor_mod(std::int64_t a, std::int64_t b) { return a - floor_div(a, b) * b; }  // in [0, b)
inline std::int64_t round_up(std::int64_t n, std::int64_t m) { return ceil_div(n, m) * m; }  // n >= 0, m > 0

// Every length the kernels form (j·s + k·d − pb, X + pb) stays within ±2^62, far from the
// int64 limits: the geometry constructors and the spec padding rules both enforce it.
constexpr std::int64_t kMaxConvLength = std::int64_t{1} << 62;

// What a layer or an op states about one convolution, forward or transposed. Per-axis
// lists hold one entry per spatial axis, or are empty for the default (stride 1,
// dilation 1, pads 0, output_padding 0). Channels and sizes are the op's own: for a
// transposed convolution, C_in and in_size describe its input (the o-side).
struct ConvParams {
    std::int64_t N = 1, C_in = 0, C_out = 0, groups = 1;
    // (The {} let users name only the fields they set without -Wmissing-field-initializers.)
    Shape in_size{}, kernel{}, stride{}, dilation{}, pads_begin{}, pads_end{}, output_padding{};
    Layout layout = Layout::NCX;
};

// The most spatial axes a convolution may have: the kernels keep per-axis arrays of this
// size (tapegrad/ops/conv_axes.hpp). Every geometry constructor refuses more.
inline constexpr int kMaxSpatialAxes = 12;

struct ConvGeometry {
    std::int64_t N = 0, G = 1, Ig = 0, Og = 0;
    Shape kernel, stride, dilation, pad_begin;  // one entry per spatial axis
    // The forward view's end padding: out = ⌊(in + pb + pad_end − eff)/s⌋ + 1. Negative
    // when a transposed result runs past what its input reaches (output_padding, or a
    // larger requested size); those positions are 0.
    Shape pad_end;
    Shape in_size;   // i-side spatial sizes (X)
    Shape out_size;  // o-side spatial sizes (Y)
    Layout layout = Layout::NCX;

    // Convolution of an input [N, C_in, in_size...] (rule F):
    //   out = ⌊(X + pb + pe − eff)/s⌋ + 1 with eff = d·(K−1) + 1; an error when X + pb + pe < eff.
    static ConvGeometry forward(const ConvParams& p, const std::string& op = "conv");
    // Transposed convolution of an input [N, C_in, in_size...]:
    //   Y = s·(X−1) + eff − pb − pe + output_padding; an error when Y < 1.
    static ConvGeometry transposed(const ConvParams& p, const std::string& op = "conv_transpose");
    // Transposed convolution with its result size given (an output_shape): pads_begin
    // applies, pads_end and output_padding are implied by the size and must be empty.
    static ConvGeometry transposed_to(const ConvParams& p, const Shape& result_size,
                                      const std::string& op = "conv_transpose");

    int D() const { return static_cast<int>(kernel.size()); }
    std::int64_t kernel_numel() const;  // ∏K
    std::int64_t in_numel() const;      // ∏X
    std::int64_t out_numel() const;     // ∏Y = P, the number of patches
    std::int64_t R() const { return Ig * kernel_numel(); }  // reduction length
    std::int64_t extent(std::size_t a) const { return dilation[a] * (kernel[a] - 1) + 1; }  // eff = d·(K−1) + 1 on axis a
    // The two sides in the forward convolution's terms: in_shape() is the i-side (a forward
    // conv's input, but a TRANSPOSED conv's result), out_shape() the o-side (a forward conv's
    // result, a transposed conv's input). input_shape() and output_shape() name them for the
    // op the geometry was made for (forward(): in, out; transposed(): out, in), so a user of
    // a transposed geometry cannot read them backwards.
    Shape in_shape() const;      // full i-side tensor shape in `layout`
    Shape out_shape() const;     // full o-side tensor shape in `layout`
    Shape input_shape() const { return transposed_op ? out_shape() : in_shape(); }
    Shape output_shape() const { return transposed_op ? in_shape() : out_shape(); }
    bool transposed_op = false;  // made by transposed() or transposed_to()
    Shape weight_shape() const;  // [G, Og, Ig, K...]
    // Multiply-adds of one CONV (= one CONVT, = one CONV_BW): N·G·Og·∏Y·Ig·∏K, as a double.
    double macs() const;
    // On every axis the taps land on distinct stride phases ((k·d − pb) mod s differs from
    // tap to tap): no two (o-side position, tap) pairs reach the same i-side position, so a
    // transposed convolution's col2im only scatters (k2 s2 p0, U-Net's up-convolution).
    bool taps_disjoint() const;
    // taps_disjoint(), and every i-side position is reached: each exactly once.
    bool taps_cover() const;
    // The least share of i-side positions the taps reach on an axis: the residues modulo the
    // stride s that the taps' offsets k·d meet (1 for most layers; 1/2 for k1 s2, 3/4 for
    // k3 s4). The multiples of d modulo s are the s/gcd(d, s) multiples of the gcd, the first
    // K of them distinct: min(K, s/gcd) residues (no table of s entries: a stride may be near
    // 2^62).
    double taps_reach() const;
    // The share of (o-side position, tap) pairs whose i-side position o·s + k·d − pb lies in
    // the image: 1 without padding; what an im2col's columns hold besides padding zeros (a
    // 3-D k5 s2 p2 layer on 4 × 4 × 4 o-side grids: 0.51). A product over the axes.
    double taps_in_bounds() const;
    // Checks internal consistency (every size ≥ 1 except N ≥ 0, equal lengths), that
    // out_size follows the rule above from in_size and the pads, and that every index the
    // kernels form fits int64. The constructors call it; `op` prefixes its messages.
    void validate(const std::string& op = "ConvGeometry") const;
};

// A per-axis setting for dflt.size() spatial axes, as ops and layers take them: empty gives
// `dflt`; one value is used on every axis when `broadcast` (layers, pooling), else the list
// must have one entry per axis (the spec ops); every entry must be >= min. Errors (key `key`)
// name `who` and the setting.
Shape per_axis(const Shape& v, const Shape& dflt, std::int64_t min, bool broadcast, const char* key, const std::string& who);

// Shape of a tensor with N, C and spatial sizes in the given layout.
Shape layout_shape(Layout layout, std::int64_t N, std::int64_t C, const Shape& spatial);

}  // namespace tg
