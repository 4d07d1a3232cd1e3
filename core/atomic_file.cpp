#include "tapegrad/core/atomic_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "tapegrad/core/error.hpp"

namespace tg {

namespace {

// The process's umask, read without changing it (umask(2) can only be read by setting it,
// which would race with other threads creating files): /proc/self/status has it on Linux.
mode_t current_umask() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
    return 022;  // the usual default, where /proc is not mounted
}

}  // namespace

std::string create_temp_beside(const std::string& path, const std::string& key) {
    std::string tmp = path + ".tmp.XXXXXX";
    const int fd = ::mkstemp(tmp.data());  // a fresh name, created exclusively, mode 0600
    if (fd < 0) fail(key, "cannot write '", path, "' (cannot create a temporary file beside it: ", std::strerror(errno), ")");
    struct stat st {};
    const mode_t mode = ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : (0666 & ~current_umask());
    const bool ok = ::fchmod(fd, mode) == 0;
    ::close(fd);
    if (!ok) {
        std::remove(tmp.c_str());
        fail(key, "cannot write '", path, "' (cannot set the mode of its temporary file)");
    }
    return tmp;
}

void move_into_place(const std::string& temp, const std::string& path, const std::string& key) {
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        std::remove(temp.c_str());
        fail(key, "cannot move the finished file into place at '", path, "': ", std::strerror(e));
    }
}

}  // namespace tg
