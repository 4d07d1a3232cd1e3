#include "tapegrad/spec/case_file.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "tapegrad/core/npy.hpp"

namespace tg {

namespace {

using json = nlohmann::json;

std::string join(const std::string& dir, const std::string& p) {
    if (p.empty()) fail("path", "empty path in case file");
    if (p[0] == '/' || dir.empty()) return p;
    return dir + "/" + p;
}

AttrValue to_attr(const std::string& key, const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return v.get<std::int64_t>();
    if (v.is_array()) {
        std::vector<std::int64_t> out;
        for (const json& e : v) {
            if (!e.is_number_integer())
                fail(key, "attribute ", key, " is the list ", v.dump().substr(0, 80),
                     ", but a list attribute holds integers (a string attribute is given as a plain string)");
            out.push_back(e.get<std::int64_t>());
        }
        return out;
    }
    fail(key, "attribute ", key, " has unsupported value ", v.dump().substr(0, 80),
         " (expected an integer list, a string or an integer)");
}

std::string need_string(const json& j, const char* key) {
    if (!j.contains(key)) fail(key, "case file lacks the required key '", key, "'");
    if (!j[key].is_string()) fail(key, "case key '", key, "' must be a string");
    return j[key].get<std::string>();
}

}  // namespace

json read_json_file(const std::string& path, const std::string& key, const std::string& cannot_read,
                    const std::string& not_json) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) fail(key, cannot_read);
    std::ifstream f(path);
    if (!f) fail(key, cannot_read);
    std::stringstream ss;
    ss << f.rdbuf();
    try {
        return json::parse(ss.str());
    } catch (const json::exception& e) {
        fail(key, not_json, e.what());
    }
}

CaseFile read_case(const std::string& path) {
    json j = read_json_file(path, "case", "cannot read case file '" + path + "'",
                                  "case file '" + path + "' is not valid JSON: ");
    if (!j.is_object()) fail("case", "case file '", path, "' must hold a JSON object");

    CaseFile c;
    const auto slash = path.find_last_of('/');
    c.dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
    if (j.contains("opset")) c.opset = need_string(j, "opset");
    c.op = need_string(j, "op");
    if (j.contains("attrs")) {
        if (!j["attrs"].is_object()) fail("attrs", "case key 'attrs' must be an object");
        for (const auto& [k, v] : j["attrs"].items()) c.attrs[k] = to_attr(k, v);
    }
    if (!j.contains("inputs")) fail("inputs", "case file lacks the required key 'inputs'");
    if (!j["inputs"].is_array()) fail("inputs", "case key 'inputs' must be a list of paths");
    for (const json& p : j["inputs"]) {
        if (!p.is_string()) fail("inputs", "case key 'inputs' must hold .npy paths, found ", p.dump().substr(0, 80));
        c.inputs.push_back(join(c.dir, p.get<std::string>()));
    }
    if (j.contains("dtype")) {
        const std::string d = need_string(j, "dtype");
        const DType t = dtype_from_name(d, "dtype");
        if (!is_float(t)) fail("dtype", "dtype '", d, "' is not a compute type (f64, f32, f16 or bf16)");
        c.dtype = t;
    }
    c.output = join(c.dir, need_string(j, "output"));
    if (j.contains("grad_output") && !j["grad_output"].is_null()) {
        c.grad_output = join(c.dir, need_string(j, "grad_output"));
        if (!j.contains("grad_inputs") || !j["grad_inputs"].is_array())
            fail("grad_inputs", "grad_output needs grad_inputs: a list with one path or null per input");
        const json& gi = j["grad_inputs"];
        if (gi.size() != c.inputs.size())
            fail("grad_inputs", "grad_inputs has ", gi.size(), " entries for ", c.inputs.size(), " inputs");
        for (const json& p : gi) {
            if (p.is_null()) c.grad_inputs.emplace_back();
            else if (p.is_string()) c.grad_inputs.emplace_back(join(c.dir, p.get<std::string>()));
            else fail("grad_inputs", "grad_inputs entries must be paths or null, found ", p.dump().substr(0, 80));
        }
    } else if (j.contains("grad_inputs") && !j["grad_inputs"].is_null()) {
        fail("grad_inputs", "grad_inputs given without grad_output");
    }
    // Every file we write must be distinct, and never one of the inputs.
    std::vector<std::string> outs{c.output};
    for (const auto& g : c.grad_inputs)
        if (g) outs.push_back(*g);
    for (std::size_t a = 0; a < outs.size(); ++a)
        for (std::size_t b = a + 1; b < outs.size(); ++b)
            if (outs[a] == outs[b]) fail("output", "output path '", outs[a], "' is requested twice");
    return c;
}

std::vector<Tensor> load_inputs(const CaseFile& c, DType& compute) {
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < c.inputs.size(); ++i)
        in.push_back(read_npy(c.inputs[i], "inputs[" + std::to_string(i) + "]"));
    if (c.dtype) {
        compute = *c.dtype;
    } else {
        if (in.empty()) fail("inputs", "the case has no inputs");
        compute = in[0].dtype();
        if (!is_float(compute))
            fail("dtype", "the first input has dtype ", dtype_name(compute), "; give a float 'dtype' or float inputs");
    }
    for (Tensor& t : in)
        if (is_float(t.dtype())) t = t.to(compute);
    return in;
}

}  // namespace tg
