// How a convolution's sizes come about: per spatial axis the numbers that enter the size
// rule, the arithmetic written out with them, the resolved pads and the result size, and the
// configurations that are legal but rarely meant (outputs that see only padding, positions
// no input reaches). `tapegrad explain` prints this for a case file (adding the spec's own
// padding rule above it); nn::Conv::explain and nn::ConvTranspose::explain give it for a
// layer and an input shape. Notation: docs/ops.md#notation.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tapegrad/ops/conv_geometry.hpp"

namespace tg {

// What explain() cannot read from the geometry: the transposed op's output_padding per axis
// (empty: none; it is folded into the geometry's end padding) and whether its output size
// was requested (an output_shape) rather than computed.
struct ExplainOptions {
    Shape output_padding{};
    bool requested_size = false;
};

struct ConvAxisExplanation {
    std::int64_t X = 0, K = 1, s = 1, d = 1;  // the op's input size, kernel, stride, dilation
    std::int64_t op = 0;                      // output_padding (transposed ops)
    bool has_op = false;                      // output_padding was given
    std::int64_t eff = 1;                     // d·(K−1) + 1
    std::int64_t pb = 0, pe = 0;              // pads_begin, pads_end (pe implied when the size was requested)
    std::int64_t L = 0;                       // transposed: the full length s·(X−1) + eff
    std::int64_t Y = 0;                       // the op's output size
    bool transposed = false;
    std::string formula;  // the size rule with this axis's numbers filled in

    std::string numbers() const;  // "X 3, K 3, s 2, d 1" (and ", op 1")
    std::string result() const;   // "pads_begin 1, pads_end 0, full length L 7, total padding 1, output size 6"
};

struct ConvExplanation {
    bool transposed = false;
    Layout layout = Layout::NCX;
    std::int64_t groups = 1;
    Shape input, weight, output;  // the op's input, the canonical weight [G, O_g, I_g, K...], its output
    std::vector<ConvAxisExplanation> axes;
    std::vector<std::string> warnings;  // "axis a: ..." per surprising configuration
};

// The explanation of the op `g` was made for (forward() or transposed()/transposed_to()).
// Errors (key "output_padding") when output_padding does not have one entry per axis or
// does not fit the geometry's end padding.
ConvExplanation explain(const ConvGeometry& g, const ExplainOptions& options = {});

// Prints the explanation as `tapegrad explain` does: the op, every axis's numbers,
// arithmetic and result, the output shape, then one "warning: " line per warning.
std::ostream& operator<<(std::ostream& os, const ConvExplanation& e);

}  // namespace tg
