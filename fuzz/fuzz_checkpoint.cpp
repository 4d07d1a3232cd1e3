// libFuzzer target: the checkpoint loader (tapegrad/nn/checkpoint.hpp) on arbitrary bytes. Every
// input must either load or raise tg::Error; anything else is a finding.
//
// Input: one flag byte, then the MANIFEST, then files, each introduced by a line
// "\n@@ NAME\n" (NAME: [A-Za-z0-9._%-], no leading '.'; others are dropped). They are
// written to a generation folder and loaded. Flag bit 0: first rewrite the MANIFEST's byte
// counts and CRC-32s (entry lines and the end line) to match the files, so that mutations
// reach the manifest and .npy parsers behind the checksums. Bit 1: load a Linear(3, 2) with
// an SGD optimizer (momentum) through load_checkpoint(m, opt, dir); else read_checkpoint and
// a non-strict load of the module alone. TAPEGRAD_FUZZ_VERBOSE=1 prints each outcome.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_file.hpp"
#include "tapegrad/core/env.hpp"
#include "tapegrad/nn/checkpoint.hpp"

namespace {

std::uint32_t crc32(const std::string& s) {
    std::uint32_t c = 0xffffffffu;
    for (unsigned char b : s) {
        c ^= b;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return c ^ 0xffffffffu;
}

std::string hex8(std::uint32_t v) {
    static const char* d = "0123456789abcdef";
    std::string s(8, '0');
    for (int i = 7; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = d[v & 15];
    return s;
}

bool good_name(const std::string& n) {
    if (n.empty() || n.size() > 100 || n[0] == '.') return false;
    for (char c : n)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-' || c == '%'))
            return false;
    return true;
}

// Rewrites the byte counts, CRC-32s and the end line of a manifest to match `files`.
std::string fix_manifest(const std::string& m, const std::vector<std::pair<std::string, std::string>>& files) {
    std::string out;
    std::size_t i = 0;
    while (i < m.size()) {
        std::size_t j = m.find('\n', i);
        const bool last = j == std::string::npos;
        std::string line = m.substr(i, last ? std::string::npos : j - i);
        i = last ? m.size() : j + 1;
        if (line.starts_with("end ")) {
            out += "end " + hex8(crc32(out)) + "\n";
            continue;
        }
        if (line.starts_with("entry ")) {
            std::vector<std::string> f;
            for (std::size_t a = 0;;) {
                const std::size_t b = line.find(' ', a);
                f.push_back(line.substr(a, b == std::string::npos ? std::string::npos : b - a));
                if (b == std::string::npos) break;
                a = b + 1;
            }
            if (f.size() == 7)
                for (const auto& [name, bytes] : files)
                    if (name == f[2]) {
                        f[3] = std::to_string(bytes.size());
                        f[4] = hex8(crc32(bytes));
                        line = f[0];
                        for (std::size_t k = 1; k < f.size(); ++k) line += " " + f[k];
                    }
        }
        out += line;
        if (!last) out += "\n";
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace fs = std::filesystem;
    if (size == 0) return 0;
    const unsigned flags = data[0];
    const std::string in(reinterpret_cast<const char*>(data) + 1, size - 1);

    // Split: the manifest, then "\n@@ NAME\n" + bytes per file.
    const std::string marker = "\n@@ ";
    std::size_t pos = in.find(marker);
    std::string manifest = in.substr(0, pos);
    std::vector<std::pair<std::string, std::string>> files;
    while (pos != std::string::npos && files.size() < 64) {
        const std::size_t name_end = in.find('\n', pos + marker.size());
        if (name_end == std::string::npos) break;
        const std::string name = in.substr(pos + marker.size(), name_end - pos - marker.size());
        const std::size_t next = in.find(marker, name_end + 1);
        std::string bytes = in.substr(name_end + 1, next == std::string::npos ? std::string::npos : next - name_end - 1);
        if (good_name(name) && name != "MANIFEST") files.emplace_back(name, std::move(bytes));
        pos = next;
    }
    if (flags & 1) manifest = fix_manifest(manifest, files);

    const fs::path dir = fs::path(tg::fuzz::scratch_dir()) / "ckpt", gen = dir / "gen-00000001";
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(gen, ec);
    tg::fuzz::put_file("ckpt/gen-00000001/MANIFEST", reinterpret_cast<const std::uint8_t*>(manifest.data()),
                       manifest.size());
    for (const auto& [name, bytes] : files)
        tg::fuzz::put_file("ckpt/gen-00000001/" + name, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());

    tg::nn::Linear model(3, 2);
    tg::nn::SGD opt(model.parameters(), 0.1, 0.9);
    try {
        if (flags & 2) {
            tg::nn::load_checkpoint(model, opt, dir.string());
        } else {
            const tg::nn::LoadedCheckpoint c = tg::nn::read_checkpoint(dir.string());
            for (const auto& [name, t] : c.tensors)
                if (t.numel() != tg::shape_numel(t.shape())) std::abort();
            tg::nn::load_checkpoint(model, dir.string(), false);
        }
        if (tg::env::text("TAPEGRAD_FUZZ_VERBOSE")) std::fprintf(stderr, "loaded\n");
    } catch (const tg::Error& e) {
        if (tg::env::text("TAPEGRAD_FUZZ_VERBOSE")) std::fprintf(stderr, "error: %s\n", e.what());
    }
    return 0;
}
