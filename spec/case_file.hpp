// The case file of `tapegrad run` / `tapegrad explain` (CASES.md), parsed and validated.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapegrad/core/tensor.hpp"
#include "tapegrad/spec/opset.hpp"

namespace tg {

struct CaseFile {
    std::string dir;  // paths in the case are relative to the case file's folder
    std::string opset = "openvino";
    std::string op;
    Attrs attrs;
    std::vector<std::string> inputs;  // resolved paths
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
// the first input's dtype).
std::vector<Tensor> load_inputs(const CaseFile& c, DType& compute);

}  // namespace tg
