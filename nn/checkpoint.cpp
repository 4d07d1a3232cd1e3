#include "tapegrad/nn/checkpoint.hpp"

#include <filesystem>

#include "tapegrad/core/npy.hpp"

namespace tg::nn {

namespace fs = std::filesystem;

void save_checkpoint(const Module& m, const std::string& dir) {
    const fs::path target(dir), tmp = fs::path(dir + ".tmp"), old = fs::path(dir + ".old");
    std::error_code ec;
    fs::remove_all(tmp, ec);
    if (!fs::create_directories(tmp, ec) && ec) fail("path", "cannot create checkpoint folder '", tmp.string(), "'");
    try {
        for (const auto& [name, p] : m.named_parameters()) write_npy((tmp / (name + ".npy")).string(), p.value(), name);
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

void load_checkpoint(Module& m, const std::string& dir) {
    auto params = m.named_parameters();
    std::vector<Tensor> loaded;
    for (const auto& [name, p] : params) {
        Tensor t = read_npy((fs::path(dir) / (name + ".npy")).string(), name);
        if (t.shape() != p.shape() || t.dtype() != p.dtype())
            fail(name, "checkpoint '", dir, "': parameter ", name, " has shape ", shape_str(t.shape()), " ",
                 dtype_name(t.dtype()), ", the module has ", shape_str(p.shape()), " ", dtype_name(p.dtype()));
        loaded.push_back(std::move(t));
    }
    for (std::size_t i = 0; i < params.size(); ++i) params[i].second.assign(loaded[i]);
}

}  // namespace tg::nn
