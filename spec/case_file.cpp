#include "tapegrad/spec/case_file.hpp"

#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "tapegrad/core/npy.hpp"

namespace tg {

namespace {

using json = nlohmann::json;

std::string join(const std::string& dir, const std::string& p, const std::string& key = "path") {
    check_path(p, key);
    if (p[0] == '/' || dir.empty()) return p;
    return dir + "/" + p;
}

AttrValue to_attr(const std::string& key, const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
        fail(key, "attribute ", key, " is ", v.dump(), ", which does not fit a signed 64-bit integer");
    if (v.is_number_integer()) return v.get<std::int64_t>();
    if (v.is_array()) {
        std::vector<std::int64_t> out;
        for (const json& e : v) {
            if (!e.is_number_integer())
                fail(key, "attribute ", key, " is the list ", v.dump().substr(0, 80),
                     ", but a list attribute holds integers (a string attribute is given as a plain string)");
            if (e.is_number_unsigned() && e.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
                fail(key, "attribute ", key, "[", out.size(), "] is ", e.dump(), ", which does not fit a signed 64-bit integer");
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

// One "inputs" entry: a path, {"shape": [...], "dtype": ...} or {"values": [...], "dtype": ...}.
CaseInput read_input(const std::string& dir, const json& p, const std::string& key) {
    CaseInput in;
    if (p.is_string()) {
        in.path = join(dir, p.get<std::string>(), key);
        return in;
    }
    const std::string shown = p.dump().substr(0, 80);
    if (!p.is_object())
        fail("inputs", key, " is ", shown, ": an input is a .npy path, {\"shape\": [...], \"dtype\": ...} or {\"values\": [...]}");
    for (const auto& [k, v] : p.items()) {
        (void)v;
        if (k != "shape" && k != "values" && k != "dtype")
            fail("inputs", key, " has the unknown key '", k, "' (an inline input has \"shape\" or \"values\", and \"dtype\")");
    }
    const bool has_shape = p.contains("shape"), has_values = p.contains("values");
    if (has_shape == has_values)
        fail("inputs", key, " is ", shown, ": an inline input has exactly one of \"shape\" (no values) and \"values\"");
    auto int_list = [&](const char* what, std::int64_t min) {
        const json& l = p[what];
        if (!l.is_array()) fail("inputs", key, " \"", what, "\" must be a list of integers");
        Shape out;
        for (const json& e : l) {
            if (!e.is_number_integer() || e.get<std::int64_t>() < min)
                fail("inputs", key, " \"", what, "\" holds ", e.dump().substr(0, 40), "; it must hold integers >= ", min);
            out.push_back(e.get<std::int64_t>());
        }
        return out;
    };
    if (has_shape) {
        in.shape = int_list("shape", 0);
        if (in.shape.size() > 64) fail("inputs", key, " \"shape\" has more than 64 dimensions");
        in.dtype = DType::f32;
    } else {
        in.values = int_list("values", INT64_MIN);
        in.shape = {static_cast<std::int64_t>(in.values->size())};
        in.dtype = DType::i64;
    }
    if (p.contains("dtype")) {
        if (!p["dtype"].is_string()) fail("inputs", key, " \"dtype\" must be a string");
        in.dtype = dtype_from_name(p["dtype"].get<std::string>(), key + " dtype");
    }
    if (has_values && is_float(in.dtype))
        fail("inputs", key, ": inline \"values\" are for integer inputs (dtype i32 or i64); give float tensors as .npy files");
    return in;
}

// The compute dtype: the case's, else the first input's.
DType compute_dtype(const CaseFile& c, const std::vector<DType>& dtypes) {
    if (c.dtype) return *c.dtype;
    if (dtypes.empty()) fail("inputs", "the case has no inputs");
    if (!is_float(dtypes[0]))
        fail("dtype", "the first input has dtype ", dtype_name(dtypes[0]), "; give a float 'dtype' or float inputs");
    return dtypes[0];
}

// Whether two paths name the same file: the same normalised path (symlinks of existing
// folders resolved), or, when both exist, the same device and inode (hard links too).
bool same_file(const std::string& a, const std::string& b) {
    namespace fs = std::filesystem;
    std::error_code ea, eb;
    const fs::path ca = fs::weakly_canonical(a, ea), cb = fs::weakly_canonical(b, eb);
    if (!ea && !eb && ca == cb) return true;
    struct stat sa {}, sb {};
    return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// The key path of the value being parsed, kept from nlohmann's parser events: one frame
// per open object (its current key) or array (its current index).
class JsonPath {
public:
    void track(json::parse_event_t event, const json& parsed) {
        using E = json::parse_event_t;
        if (event == E::object_start || event == E::array_start || event == E::value) next_element();
        if (event == E::object_start) frames_.push_back({false, -1, ""});
        else if (event == E::array_start) frames_.push_back({true, -1, ""});
        else if ((event == E::object_end || event == E::array_end) && !frames_.empty()) frames_.pop_back();
        else if (event == E::key && !frames_.empty() && parsed.is_string()) frames_.back().key = parsed.get<std::string>();
    }
    // "attrs.strides[0][0]", a run of more than 3 equal steps shortened and counted
    // ("attrs.strides[0]...[0] ([0] 31 times)"); "the top level" for the outermost value.
    std::string str() const {
        std::vector<std::string> steps;  // ".key" or "[i]", for every frame inside an element
        for (const Frame& f : frames_) {
            if (f.array && f.index < 0) continue;  // opened, no element yet
            if (!f.array && f.key.empty()) continue;
            std::string step = f.array ? "[" : ".";
            step += f.array ? std::to_string(f.index) + "]" : f.key;
            steps.push_back(std::move(step));
        }
        std::string s, counts;
        for (std::size_t i = 0; i < steps.size();) {
            std::size_t run = 1;
            while (i + run < steps.size() && steps[i + run] == steps[i]) ++run;
            if (run > 3) {
                s += steps[i] + "..." + (steps[i][0] == '.' ? steps[i].substr(1) : steps[i]);
                counts += (counts.empty() ? " (" : ", ") + (steps[i][0] == '.' ? steps[i].substr(1) : steps[i]) + " " +
                          std::to_string(run) + " times";
            } else {
                s += steps[i];
                run = 1;
            }
            i += run;
        }
        if (!s.empty() && s[0] == '.') s.erase(0, 1);
        return s.empty() ? "the top level" : s + (counts.empty() ? "" : counts + ")");
    }

private:
    struct Frame {
        bool array;
        std::int64_t index;
        std::string key;
    };
    void next_element() {
        if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    }
    std::vector<Frame> frames_;
};

}  // namespace

json read_json_file(const std::string& path, const std::string& key, const std::string& cannot_read,
                    const std::string& not_json) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) fail(key, cannot_read);
    std::ifstream f(path);
    if (!f) fail(key, cannot_read);
    std::stringstream ss;
    ss << f.rdbuf();
    // Nesting is bounded while parsing (no case file or shapes file nests deeper than a few
    // levels): a value nested 100 000 deep is refused before it is built, naming the key
    // path where it happened ("attrs.strides[0][0]...").
    constexpr int kMaxDepth = 32;
    JsonPath where;
    const json::parser_callback_t depth_limit = [&](int depth, json::parse_event_t event, json& parsed) {
        where.track(event, parsed);
        if (depth > kMaxDepth)
            fail(key, not_json, "values nest deeper than ", kMaxDepth, " levels at ", where.str());
        return true;
    };
    try {
        return json::parse(ss.str(), depth_limit);
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
    for (const json& p : j["inputs"]) c.inputs.push_back(read_input(c.dir, p, "inputs[" + std::to_string(c.inputs.size()) + "]"));
    if (j.contains("dtype")) {
        const std::string d = need_string(j, "dtype");
        const DType t = dtype_from_name(d, "dtype");
        if (!is_float(t)) fail("dtype", "dtype '", d, "' is not a compute type (f64, f32, f16 or bf16)");
        c.dtype = t;
    }
    c.output = join(c.dir, need_string(j, "output"), "output");
    if (j.contains("grad_output") && !j["grad_output"].is_null()) {
        c.grad_output = join(c.dir, need_string(j, "grad_output"), "grad_output");
        if (!j.contains("grad_inputs") || !j["grad_inputs"].is_array())
            fail("grad_inputs", "grad_output needs grad_inputs: a list with one path or null per input");
        const json& gi = j["grad_inputs"];
        if (gi.size() != c.inputs.size())
            fail("grad_inputs", "grad_inputs has ", gi.size(), " entries for ", c.inputs.size(), " inputs");
        for (const json& p : gi) {
            if (p.is_null()) c.grad_inputs.emplace_back();
            else if (p.is_string()) c.grad_inputs.emplace_back(join(c.dir, p.get<std::string>(), "grad_inputs"));
            else fail("grad_inputs", "grad_inputs entries must be paths or null, found ", p.dump().substr(0, 80));
        }
    } else if (j.contains("grad_inputs") && !j["grad_inputs"].is_null()) {
        fail("grad_inputs", "grad_inputs given without grad_output");
    }
    // Every file we write must be distinct, and never one of the files we read: compared as
    // files (normalised paths, and device and inode where they exist), not as strings.
    std::vector<std::pair<std::string, std::string>> outs{{"output", c.output}};
    for (std::size_t i = 0; i < c.grad_inputs.size(); ++i)
        if (c.grad_inputs[i]) outs.emplace_back("grad_inputs[" + std::to_string(i) + "]", *c.grad_inputs[i]);
    std::vector<std::pair<std::string, std::string>> reads{{"the case file", path}};
    for (std::size_t i = 0; i < c.inputs.size(); ++i)
        if (!c.inputs[i].path.empty()) reads.emplace_back("inputs[" + std::to_string(i) + "]", c.inputs[i].path);
    if (c.grad_output) reads.emplace_back("grad_output", *c.grad_output);
    for (std::size_t a = 0; a < outs.size(); ++a) {
        for (std::size_t b = a + 1; b < outs.size(); ++b)
            if (same_file(outs[a].second, outs[b].second))
                fail(outs[b].first, outs[a].first, " '", outs[a].second, "' and ", outs[b].first, " '", outs[b].second,
                     "' are the same file");
        for (const auto& [rk, rp] : reads)
            if (same_file(outs[a].second, rp))
                fail(outs[a].first, outs[a].first, " '", outs[a].second, "' is the same file as ", rk, " '", rp,
                     "': an output may not replace an input");
    }
    return c;
}

std::vector<Tensor> load_inputs(const CaseFile& c, DType& compute) {
    std::vector<Tensor> in;
    std::vector<DType> dtypes;
    for (std::size_t i = 0; i < c.inputs.size(); ++i) {
        const CaseInput& ci = c.inputs[i];
        const std::string key = "inputs[" + std::to_string(i) + "]";
        if (ci.shape_only())
            fail("inputs", key, " gives only a shape ", shape_str(ci.shape),
                 "; tapegrad run needs values: give a .npy path (shape-only inputs are for explain and gradcheck, "
                 "docs/cases.md#inputs)");
        if (ci.values) {
            in.push_back(Tensor::from(ci.shape, std::vector<double>(ci.values->begin(), ci.values->end()), ci.dtype));
            if (ci.dtype == DType::i32)
                for (std::int64_t v : *ci.values)
                    if (v < INT32_MIN || v > INT32_MAX) fail("inputs", key, " value ", v, " does not fit i32");
        } else {
            in.push_back(read_npy(ci.path, key));
        }
        dtypes.push_back(in.back().dtype());
    }
    compute = compute_dtype(c, dtypes);
    for (Tensor& t : in)
        if (is_float(t.dtype())) t = t.to(compute);
    return in;
}

std::vector<InputInfo> input_infos(const CaseFile& c, DType& compute) {
    std::vector<InputInfo> in;
    std::vector<DType> dtypes;
    for (std::size_t i = 0; i < c.inputs.size(); ++i) {
        const CaseInput& ci = c.inputs[i];
        const std::string key = "inputs[" + std::to_string(i) + "]";
        if (!ci.path.empty()) {
            const NpyInfo h = read_npy_header(ci.path, key);
            // An integer input is an output_shape: its values are needed, and it is small.
            if (!is_float(h.dtype) && h.shape.size() == 1) in.push_back(input_info(read_npy(ci.path, key)));
            else in.push_back({h.shape, h.dtype, std::nullopt});
        } else {
            if (ci.dtype == DType::i32 && ci.values)
                for (std::int64_t v : *ci.values)
                    if (v < INT32_MIN || v > INT32_MAX) fail("inputs", key, " value ", v, " does not fit i32");
            in.push_back({ci.shape, ci.dtype, ci.values});
        }
        dtypes.push_back(in.back().dtype);
    }
    compute = compute_dtype(c, dtypes);
    for (InputInfo& t : in)
        if (is_float(t.dtype)) t.dtype = compute;
    return in;
}

}  // namespace tg
