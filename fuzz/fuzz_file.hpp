// Shared by the fuzz targets: the readers under test take paths, so each input is written
// to a file in a private directory (in /dev/shm when it exists: no disk traffic).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace tg::fuzz {

// A directory of this process's own, made on first use and kept for the run.
inline const std::string& scratch_dir() {
    static const std::string dir = [] {
        std::string tmpl = (access("/dev/shm", W_OK) == 0 ? std::string("/dev/shm") : std::string("/tmp")) +
                           "/tapegrad-fuzz-XXXXXX";
        if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        return tmpl;
    }();
    return dir;
}

// Writes the bytes to scratch_dir()/name and returns the path.
inline std::string put_file(const std::string& name, const std::uint8_t* data, std::size_t size) {
    const std::string path = scratch_dir() + "/" + name;
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!f) throw std::runtime_error("cannot write " + path);
    return path;
}

}  // namespace tg::fuzz
