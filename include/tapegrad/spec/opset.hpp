// The OpenVINO and oneDNN Graph convolution ops, mapped onto the one ConvGeometry through
// one table (docs/ops.md). Spec names, layouts, formats and defaults live here
// and nowhere else: the kernels only see canonical geometry and weights.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tapegrad/autograd/variable.hpp"
#include "tapegrad/core/tensor.hpp"
#include "tapegrad/ops/conv_geometry.hpp"
#include "tapegrad/spec/padding.hpp"

namespace tg {

// An attribute value as a case file gives it: an int list, a string or an int.
using AttrValue = std::variant<std::vector<std::int64_t>, std::string, std::int64_t>;
using Attrs = std::map<std::string, AttrValue>;

enum class Computation { Conv, ConvT };  // CONV or CONVT (docs/ops.md#the-two-computations)

struct OpSpec;

// An op whose attributes and input shapes have been validated and resolved.
struct ResolvedOp {
    const OpSpec* spec = nullptr;
    std::string name;              // "openvino ConvolutionBackpropData"
    Computation comp = Computation::Conv;
    ConvGeometry geom;             // i-side/o-side per section 2
    std::vector<AxisResolution> axes;
    Shape result_shape;            // in the op's data layout
    std::vector<int> filter_perm;  // stored filter -> channel-first [G·Og, Ig, K...]
    int data_input = 0, filter_input = 1, bias_input = -1;
    bool has_bias = false;

};

// What resolving an op needs to know about one input: its shape and dtype, and for an
// integer input (output_shape) its values. `tapegrad explain` builds these from .npy
// headers or shape-only case entries, without loading any data.
struct InputInfo {
    Shape shape;
    DType dtype = DType::f32;
    std::optional<Shape> values;  // integer inputs: their values, when known
};
InputInfo input_info(const Tensor& t);  // the values are read for 1-D integer tensors

// Validates everything docs/ops.md#errors lists and resolves padding. `inputs` are the op's
// inputs in spec order (data, filter, then output_shape or bias), already in their final
// dtypes. Throws Error naming the offending key.
ResolvedOp resolve_op(const std::string& opset, const std::string& op, const Attrs& attrs,
                      const std::vector<Tensor>& inputs);
ResolvedOp resolve_op_info(const std::string& opset, const std::string& op, const Attrs& attrs,
                           const std::vector<InputInfo>& inputs);

// The op on the tape, with `inputs` in spec order (data, filter, then output_shape or bias).
// The stored filter is relaid to the canonical W by differentiable permute and reshape, so
// the filter gradient comes back in the op's own layout; a bias is fused into the conv op
// (one rounding in f16/bf16); output_shape gets no gradient.
ag::Variable spec_op(const ResolvedOp& r, const std::vector<ag::Variable>& inputs);

// The op's result for float inputs of one dtype: spec_op with grad mode off.
Tensor run_op(const ResolvedOp& r, const std::vector<Tensor>& inputs);

// The result and the gradients of ⟨result, dy⟩ with respect to each input (undefined for
// the integer output_shape input), through the tape: spec_op, then backward.
struct OpRun {
    Tensor result;
    std::vector<Tensor> grads;
};
OpRun run_op_with_grads(const ResolvedOp& r, const std::vector<Tensor>& inputs, const Tensor& dy);

// Names of the ops of an opset, for messages and help.
std::vector<std::string> op_names(const std::string& opset);

}  // namespace tg
