// The case file of `tapegrad run` / `explain` / `gradcheck` (docs/cases.md), parsed and validated.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapegrad/core/tensor.hpp"
#include "tapegrad/spec/opset.hpp"

namespace tg {

// One entry of "inputs" (docs/cases.md#inputs): a .npy path; or inline, either
// {"shape": [...], "dtype": ...} (a shape without values: explain and gradcheck only) or
// {"values": [...], "dtype": "i64"} (a 1-D integer tensor, e.g. an output_shape input).
struct CaseInput {
    std::string path;  // resolved path; empty for an inline entry
    Shape shape;       // inline entries: the shape ({"values": [...]} gives [n])
    DType dtype = DType::f32;
    std::optional<Shape> values;  // {"values": [...]}
    bool shape_only() const { return path.empty() && !values; }
};

struct CaseFile {
    std::string dir;  // paths in the case are relative to the case file's folder
    std::string opset = "openvino";
    std::string op;
    Attrs attrs;
    std::vector<CaseInput> inputs;
    std::optional<DType> dtype;
    std::string output;
    std::optional<std::string> grad_output;
    std::vector<std::optional<std::string>> grad_inputs;
};

// The JSON held by the regular file at `path` (case files, benchmark shapes). Fails under
// `key` with `cannot_read` when it is not a readable regular file, and with `not_json`
// followed by the parser's message when it is not JSON.
nlohmann::json read_json_file(const std::string& path, const std::string& key, const std::string& cannot_read,
                              const std::string& not_json);

// Reads and checks the JSON; errors name the offending key.
CaseFile read_case(const std::string& path);

// Loads the inputs and converts float inputs to the compute dtype (the `dtype` key, or
// the first input's dtype), for `tapegrad run`: a shape-only entry is an error naming it.
std::vector<Tensor> load_inputs(const CaseFile& c, DType& compute);

// What resolving the op needs, without loading float data: .npy headers, inline shapes,
// the values of integer inputs; float dtypes are replaced by the compute dtype.
std::vector<InputInfo> input_infos(const CaseFile& c, DType& compute);

}  // namespace tg
