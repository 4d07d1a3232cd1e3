#include "tapegrad/nn/checkpoint.hpp"

#include <algorithm>
#include <filesystem>

#include "tapegrad/core/npy.hpp"

namespace tg::nn {

namespace fs = std::filesystem;

void save_state_dict(const StateDict& dict, const std::string& dir) {
    const fs::path target(dir), tmp = fs::path(dir + ".tmp"), old = fs::path(dir + ".old");
    std::error_code ec;
    fs::remove_all(tmp, ec);
    if (!fs::create_directories(tmp, ec) && ec) fail("path", "cannot create checkpoint folder '", tmp.string(), "'");
    try {
        for (const auto& [name, t] : dict) write_npy((tmp / (name + ".npy")).string(), t, name);
    } catch (...) {
        fs::remove_all(tmp, ec);
        throw;
    }
    fs::remove_all(old, ec);
    if (fs::exists(target)) fs::rename(target, old, ec);
    fs::rename(tmp, target, ec);
    if (ec) fail("path", "cannot move the checkpoint into place at '", dir, "': ", ec.message());
    fs::remove_all(old, ec);
}

void save_checkpoint(const Module& m, const std::string& dir) { save_state_dict(m.state_dict(), dir); }

StateDict read_state_dict(const std::string& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) fail("path", "checkpoint '", dir, "' is not a folder");
    std::vector<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
        const std::string f = e.path().filename().string();
        if (e.is_regular_file() && f.size() > 4 && f.ends_with(".npy")) names.push_back(f.substr(0, f.size() - 4));
    }
    if (ec) fail("path", "cannot list checkpoint folder '", dir, "': ", ec.message());
    std::sort(names.begin(), names.end());
    StateDict out;
    for (const std::string& n : names) out.insert(n, read_npy((fs::path(dir) / (n + ".npy")).string(), n));
    return out;
}

LoadResult load_checkpoint(Module& m, const std::string& dir, bool strict) {
    StateDict dict = read_state_dict(dir);
    for (const auto& [name, t] : m.state_dict()) {
        const Tensor* f = dict.find(name);
        if (f && t.dtype() == DType::bf16 && f->dtype() == DType::f32) dict.set(name, f->to(DType::bf16));
    }
    try {
        return m.load_state_dict(dict, strict);
    } catch (const Error& e) {
        throw Error(e.key(), "checkpoint '" + dir + "': " + e.what());
    }
}

}  // namespace tg::nn
