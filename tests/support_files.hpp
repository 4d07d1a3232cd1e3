// Small helpers shared by the file-based tests (npy, command line, example cases): a
// temporary directory that cleans up after itself, byte-level file writing, and running
// the tapegrad binary with its exit code and stderr captured.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

namespace tg::testsov {

namespace fs = std::filesystem;

class TempDir {
public:
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "tapegrad-test-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const fs::path& path() const { return path_; }
    std::string operator/(const std::string& name) const { return (path_ / name).string(); }
    // Names of the regular files directly inside (no recursion).
    std::set<std::string> files() const {
        std::set<std::string> out;
        for (const auto& e : fs::directory_iterator(path_)) out.insert(e.path().filename().string());
        return out;
    }

private:
    fs::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + path);
}

inline std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Little-endian bytes of an integer of `n` bytes.
inline std::string le(std::uint64_t v, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
    return s;
}

// A .npy file by hand: magic, version, header length of the version's width, the header
// dict padded with spaces and a newline to a 64-byte boundary, then the payload.
inline std::string npy_bytes(const std::string& dict, const std::string& payload, int major = 1) {
    const std::size_t pre = major == 1 ? 10 : 12;
    std::string h = dict;
    const std::size_t total = pre + h.size() + 1;
    h.append((64 - total % 64) % 64, ' ');
    h += '\n';
    std::string s = "\x93NUMPY";
    s += static_cast<char>(major);
    s += '\0';
    s += le(h.size(), major == 1 ? 2 : 4);
    return s + h + payload;
}

struct CommandResult {
    int exit_code = -1;
    std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// Runs `exe <args...>` with stdout and stderr captured into files of `scratch`; `env` holds
// NAME=value settings for the command's environment.
inline CommandResult run_program(const std::string& exe, const std::vector<std::string>& args, const TempDir& scratch,
                                 const std::vector<std::string>& env = {}) {
    std::string cmd = "env";
    for (const std::string& e : env) cmd += ' ' + shell_quote(e);
    cmd += ' ';
    cmd += shell_quote(exe);
    for (const std::string& a : args) {
        cmd += ' ';
        cmd += shell_quote(a);
    }
    const std::string out = scratch / "stdout.txt", err = scratch / "stderr.txt";
    // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "literal" + string&&.
    cmd += " >";
    cmd += shell_quote(out);
    cmd += " 2>";
    cmd += shell_quote(err);
    const int status = std::system(cmd.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    r.out = read_text(out);
    r.err = read_text(err);
    return r;
}

// The number of lines of a program's output (its newlines).
inline std::size_t count_lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

// Runs `tapegrad <args...>` (run_program on the command line built with the tests).
inline CommandResult run_tapegrad(const std::vector<std::string>& args, const TempDir& scratch,
                                  const std::vector<std::string>& env = {}) {
    return run_program(TAPEGRAD_EXE, args, scratch, env);
}

// The command line's contract for a refused input: exit status 1 and exactly one stderr
// line, starting with "error: ".
inline bool one_error_line(const CommandResult& r) {
    return r.exit_code == 1 && r.err.rfind("error: ", 0) == 0 && r.err.find('\n') == r.err.size() - 1;
}

}  // namespace tg::testsov
