#include "tapegrad/nn/checkpoint.hpp"
#include "tapegrad/core/env.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tapegrad/core/npy.hpp"

namespace tg::nn {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMagic = "tapegrad-checkpoint";
constexpr int kVersion = 1;
constexpr const char* kManifest = "MANIFEST";
constexpr std::int64_t kMaxManifestBytes = std::int64_t{64} << 20;

// ---- fault injection -------------------------------------------------------------------

std::atomic<int> g_fault{-1};
std::atomic<bool> g_fault_set{false};
std::atomic<int> g_fault_steps{0};

struct FaultCounter {
    int fault = -1, step = 0;
    FaultCounter() {
        if (g_fault_set.load()) {
            fault = g_fault.load();
        } else if (const std::optional<std::int64_t> v = env::integer("TAPEGRAD_CHECKPOINT_FAULT", 0, 999999)) {
            fault = static_cast<int>(*v);
        }
    }
    void point() {
        if (step == fault) ::raise(SIGKILL);
        g_fault_steps.store(++step);
    }
};

// ---- small helpers ---------------------------------------------------------------------

std::uint32_t crc_of(const char* p, std::size_t n) {
    uLong c = ::crc32(0L, Z_NULL, 0);
    while (n > 0) {
        const uInt k = static_cast<uInt>(std::min<std::size_t>(n, std::size_t{1} << 30));
        c = ::crc32(c, reinterpret_cast<const Bytef*>(p), k);
        p += k;
        n -= k;
    }
    return static_cast<std::uint32_t>(c);
}

std::string hex8(std::uint32_t v) {
    char b[9];
    std::snprintf(b, sizeof b, "%08x", v);
    return b;
}

bool plain_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

std::string encode_name(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (plain_char(c) && !(i == 0 && c == '.')) {
            out += c;
        } else {
            char b[4];
            std::snprintf(b, sizeof b, "%%%02X", static_cast<unsigned char>(c));
            out += b;
        }
    }
    return out;
}

int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// The inverse of encode_name; false for anything encode_name cannot have written.
bool decode_name(const std::string& s, std::string& out) {
    out.clear();
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%') {
            if (i + 2 >= s.size()) return false;
            const int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
            if (h < 0 || l < 0) return false;
            out += static_cast<char>(h * 16 + l);
            i += 2;
        } else if (plain_char(s[i]) && !(i == 0 && s[i] == '.')) {
            out += s[i];
        } else {
            return false;
        }
    }
    return !out.empty() && encode_name(out) == s;
}

bool valid_info_key(const std::string& k) {
    return !k.empty() && k.size() <= 200 && std::all_of(k.begin(), k.end(), plain_char);
}
bool valid_info_value(const std::string& v) { return v.find_first_of(std::string("\n\r\0", 3)) == std::string::npos; }

// A file name a manifest may list: plain characters and '%', no leading '.', not MANIFEST.
bool valid_file_name(const std::string& f) {
    if (f.empty() || f.size() > 255 || f[0] == '.' || f == kManifest || f.ends_with(".tmp")) return false;
    return std::all_of(f.begin(), f.end(), [](char c) { return plain_char(c) || c == '%'; });
}

std::string shape_text(const Shape& s) {
    std::string o = "[";
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i) o += ',';
        o += std::to_string(s[i]);
    }
    return o + "]";
}

bool parse_u64(const std::string& s, std::uint64_t max, std::uint64_t& out) {
    if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    if (s.size() > 1 && s[0] == '0') return false;
    out = std::stoull(s);
    return out <= max;
}

bool parse_shape(const std::string& s, Shape& out) {
    out.clear();
    if (s.size() < 2 || s.front() != '[' || s.back() != ']') return false;
    const std::string body = s.substr(1, s.size() - 2);
    if (body.empty()) return true;
    std::size_t pos = 0;
    while (true) {
        const std::size_t comma = body.find(',', pos);
        std::uint64_t v = 0;
        if (!parse_u64(body.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos),
                       std::uint64_t{1} << 40, v))
            return false;
        out.push_back(static_cast<std::int64_t>(v));
        if (out.size() > 32) return false;
        if (comma == std::string::npos) return true;
        pos = comma + 1;
    }
}

std::vector<std::string> split_spaces(const std::string& line) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i <= line.size()) {
        const std::size_t j = line.find(' ', i);
        out.push_back(line.substr(i, j == std::string::npos ? std::string::npos : j - i));
        if (j == std::string::npos) break;
        i = j + 1;
    }
    return out;
}

// ---- POSIX file operations with errors that name the path --------------------------------

void fsync_path(const std::string& path, bool directory) {
    const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) fail("checkpoint", "cannot open '", path, "' to fsync it: ", std::strerror(errno));
    const int r = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (r != 0) fail("checkpoint", "fsync of '", path, "' failed: ", std::strerror(err));
}

// Writes `bytes` to a new file and fsyncs it; the fault counter gets a step halfway.
void write_file(const std::string& path, const std::string& bytes, FaultCounter& fc) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) fail("checkpoint", "cannot create '", path, "': ", std::strerror(errno));
    auto put = [&](const char* p, std::size_t n) {
        while (n > 0) {
            const ssize_t w = ::write(fd, p, n);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                const int err = errno;
                ::close(fd);
                fail("checkpoint", "error while writing '", path, "': ", std::strerror(err));
            }
            p += w;
            n -= static_cast<std::size_t>(w);
        }
    };
    const std::size_t half = bytes.size() / 2;
    put(bytes.data(), half);
    fc.point();
    put(bytes.data() + half, bytes.size() - half);
    if (::fsync(fd) != 0) {
        const int err = errno;
        ::close(fd);
        fail("checkpoint", "fsync of '", path, "' failed: ", std::strerror(err));
    }
    if (::close(fd) != 0) fail("checkpoint", "error while closing '", path, "': ", std::strerror(errno));
    fc.point();
}

// Reads a regular file of at most `max` bytes (no symlinks, FIFOs or devices).
std::string read_file(const std::string& path, std::int64_t max, const std::string& what) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) fail("checkpoint", what, " is missing or unreadable (", std::strerror(errno), ")");
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail("checkpoint", what, " is not a regular file");
    }
    if (st.st_size > max) {
        ::close(fd);
        fail("checkpoint", what, " is ", static_cast<long long>(st.st_size), " bytes, over the limit of ", max);
    }
    std::string out(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < out.size()) {
        const ssize_t r = ::read(fd, out.data() + got, out.size() - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += static_cast<std::size_t>(r);
    }
    ::close(fd);
    if (got != out.size()) fail("checkpoint", what, " could not be read whole (", got, " of ", out.size(), " bytes)");
    return out;
}

// ---- generations -----------------------------------------------------------------------

struct Generation {
    std::uint64_t number = 0;
    fs::path path;
    bool committed = false;  // has a MANIFEST
};

std::string gen_name(std::uint64_t n) {
    char b[32];
    std::snprintf(b, sizeof b, "gen-%08llu", static_cast<unsigned long long>(n));
    return b;
}

// Every gen-<number> folder, newest first.
std::vector<Generation> list_generations(const fs::path& dir) {
    std::vector<Generation> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string f = it->path().filename().string();
        const std::string digits = f.size() > 4 ? f.substr(4) : "";
        if (!f.starts_with("gen-") || digits.size() < 8 || digits.size() > 18 ||
            digits.find_first_not_of("0123456789") != std::string::npos)
            continue;
        const std::uint64_t n = std::stoull(digits);
        if (f != gen_name(n)) continue;  // only the names a save writes ("gen-00000007", not "gen-7")
        std::error_code e2;
        if (!fs::is_directory(fs::symlink_status(it->path(), e2))) continue;
        out.push_back({n, it->path(), fs::exists(fs::symlink_status(it->path() / kManifest, e2))});
    }
    if (ec) fail("checkpoint", "cannot list checkpoint folder '", dir.string(), "': ", ec.message());
    std::sort(out.begin(), out.end(), [](const Generation& a, const Generation& b) { return a.number > b.number; });
    return out;
}

// Removes a generation: its MANIFEST first, so that a crash half-way leaves an uncommitted
// folder (which no loader reads and the next save clears away).
void remove_generation(const fs::path& g) {
    std::error_code ec;
    fs::remove(g / kManifest, ec);
    fs::remove_all(g, ec);
}

class FolderLock {
public:
    explicit FolderLock(const fs::path& dir) {
        const std::string p = (dir / ".lock").string();
        fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd_ < 0) fail("checkpoint", "cannot open the lock file '", p, "': ", std::strerror(errno));
        while (::flock(fd_, LOCK_EX) != 0)
            if (errno != EINTR) {
                ::close(fd_);
                fail("checkpoint", "cannot lock '", p, "': ", std::strerror(errno));
            }
    }
    ~FolderLock() { ::close(fd_); }
    FolderLock(const FolderLock&) = delete;
    FolderLock& operator=(const FolderLock&) = delete;

private:
    int fd_ = -1;
};

struct ManifestEntry {
    std::string name, file;
    std::uint64_t bytes = 0;
    std::uint32_t crc = 0;
    DType dtype = DType::f32;
    Shape shape;
};

// Reads and verifies one generation; errors name the file at fault.
LoadedCheckpoint read_generation(const fs::path& g) {
    const std::string gname = g.filename().string();
    auto bad = [&](const std::string& what) -> void { fail("checkpoint", gname, ": ", what); };
    const std::string text = read_file((g / kManifest).string(), kMaxManifestBytes, gname + ": MANIFEST");

    // Split into lines; the last must be "end <crc>" over every byte before it.
    if (text.empty() || text.back() != '\n') bad("MANIFEST does not end with a newline (truncated?)");
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t j = text.find('\n', i);
        lines.push_back(text.substr(i, j - i));
        i = j + 1;
    }
    const std::string header = std::string(kMagic) + " ";
    if (!lines[0].starts_with(header)) bad("MANIFEST does not start with '" + header + "'");
    if (lines[0] != header + std::to_string(kVersion))
        bad("MANIFEST has format '" + lines[0].substr(0, 100) + "', this reader knows version " + std::to_string(kVersion));
    const std::string& last = lines.back();
    if (lines.size() < 2 || !last.starts_with("end ") || last.size() != 12)
        bad("MANIFEST lacks its final 'end <crc32>' line (truncated?)");
    const std::size_t body = text.size() - last.size() - 1;
    if (hex8(crc_of(text.data(), body)) != last.substr(4))
        bad("MANIFEST checksum mismatch: its bytes give " + hex8(crc_of(text.data(), body)) + ", its end line says " +
            last.substr(4));

    LoadedCheckpoint out;
    out.generation = g.string();
    std::vector<ManifestEntry> entries;
    std::set<std::string> files, names;
    for (std::size_t li = 1; li + 1 < lines.size(); ++li) {
        const std::string& line = lines[li];
        const std::string where = "MANIFEST line " + std::to_string(li + 1) + ": ";
        if (line.starts_with("info ")) {
            const std::size_t sp = line.find(' ', 5);
            const std::string k = line.substr(5, sp == std::string::npos ? std::string::npos : sp - 5);
            if (sp == std::string::npos || !valid_info_key(k) || !valid_info_value(line.substr(sp + 1)))
                bad(where + "malformed info line");
            if (!out.info.emplace(k, line.substr(sp + 1)).second) bad(where + "duplicate info key '" + k + "'");
            continue;
        }
        const std::vector<std::string> f = split_spaces(line);
        if (f.size() != 7 || f[0] != "entry") bad(where + "expected 'info' or 'entry <name> <file> <bytes> <crc32> <dtype> <shape>'");
        ManifestEntry e;
        if (!decode_name(f[1], e.name) || e.name.size() > 1000) bad(where + "malformed entry name");
        e.file = f[2];
        if (!valid_file_name(e.file)) bad(where + "invalid file name");
        if (!parse_u64(f[3], std::uint64_t{1} << 40, e.bytes)) bad(where + "malformed byte count");
        if (f[4].size() != 8 || f[4].find_first_not_of("0123456789abcdef") != std::string::npos)
            bad(where + "malformed crc32");
        e.crc = static_cast<std::uint32_t>(std::stoul(f[4], nullptr, 16));
        try {
            e.dtype = dtype_from_name(f[5], "dtype");
        } catch (const Error&) {
            bad(where + "unknown dtype");
        }
        if (!parse_shape(f[6], e.shape)) bad(where + "malformed shape");
        if (!names.insert(e.name).second) bad(where + "duplicate entry '" + e.name + "'");
        if (!files.insert(e.file).second) bad(where + "file '" + e.file + "' listed twice");
        entries.push_back(std::move(e));
    }

    // Nothing but the listed files and the MANIFEST.
    std::error_code ec;
    for (fs::directory_iterator it(g, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string f = it->path().filename().string();
        if (f != kManifest && !files.count(f)) bad("unexpected file '" + f + "' (not in the MANIFEST)");
    }
    if (ec) bad("cannot list the folder: " + ec.message());

    for (const ManifestEntry& e : entries) {
        const std::string what = gname + "/" + e.file;
        const std::string bytes =
            read_file((g / e.file).string(), static_cast<std::int64_t>(e.bytes), gname + ": file '" + e.file + "'");
        if (bytes.size() != e.bytes)
            bad("file '" + e.file + "' is " + std::to_string(bytes.size()) + " bytes, the MANIFEST says " +
                std::to_string(e.bytes) + " (truncated?)");
        const std::uint32_t crc = crc_of(bytes.data(), bytes.size());
        if (crc != e.crc) bad("file '" + e.file + "' fails its checksum (CRC-32 " + hex8(crc) + ", the MANIFEST says " + hex8(e.crc) + ")");
        Tensor t;
        try {
            t = decode_npy(bytes, what, e.name, {.max_bytes = static_cast<std::int64_t>(e.bytes)});
        } catch (const Error& err) {
            bad("file '" + e.file + "': " + err.what());
        }
        const DType stored = e.dtype == DType::bf16 ? DType::f32 : e.dtype;
        if (t.dtype() != stored || t.shape() != e.shape)
            bad("file '" + e.file + "' holds " + dtype_name(t.dtype()) + " " + shape_text(t.shape()) + ", the MANIFEST says " +
                dtype_name(e.dtype) + " " + shape_text(e.shape));
        if (e.dtype == DType::bf16) t = t.to(DType::bf16);
        out.tensors.insert(e.name, std::move(t));
    }
    return out;
}

}  // namespace

namespace detail {
void set_checkpoint_fault(int k) {
    g_fault.store(k < 0 ? -1 : k);
    g_fault_set.store(true);
}
int checkpoint_fault_steps() { return g_fault_steps.load(); }
}  // namespace detail

void write_checkpoint(const std::string& dir, const CheckpointData& data) {
    check_path(dir, "checkpoint");
    for (const auto& [name, t] : data.tensors) {
        if (name.empty() || name.size() > 1000) fail("checkpoint", "checkpoint entry names must be 1 to 1000 bytes long");
        if (!t.defined()) fail(name, "checkpoint entry '", name, "' is undefined");
    }
    for (const auto& [k, v] : data.info) {
        if (!valid_info_key(k)) fail("checkpoint", "checkpoint info key '", k, "' must be 1 to 200 of [A-Za-z0-9_.-]");
        if (!valid_info_value(v)) fail(k, "checkpoint info '", k, "' holds a newline, carriage return or NUL");
    }
    FaultCounter fc;
    g_fault_steps.store(0);
    const fs::path root(dir);
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
        if (!fs::create_directories(root, ec) || ec)
            fail("checkpoint", "cannot create checkpoint folder '", dir, "'", ec ? ": " + ec.message() : "");
        fsync_path(root.has_parent_path() ? root.parent_path().string() : ".", true);
    }
    FolderLock lock(root);
    fc.point();

    // Clear what crashed saves left (uncommitted generations), pick the next number.
    std::vector<Generation> gens = list_generations(root);
    const std::uint64_t next = gens.empty() ? 1 : gens.front().number + 1;
    std::vector<Generation> committed;
    for (const Generation& g : gens)
        if (g.committed) committed.push_back(g);
        else remove_generation(g.path);

    const fs::path g = root / gen_name(next);
    if (!fs::create_directory(g, ec) || ec)
        fail("checkpoint", "cannot create '", g.string(), "'", ec ? ": " + ec.message() : "");
    fsync_path(root.string(), true);
    fc.point();

    std::string manifest = std::string(kMagic) + " " + std::to_string(kVersion) + "\n";
    for (const auto& [k, v] : data.info) manifest += "info " + k + " " + v + "\n";
    std::set<std::string> used;
    std::size_t index = 0;
    for (const auto& [name, t] : data.tensors) {
        const std::string enc = encode_name(name);
        std::string file = enc + ".npy";
        if (file.size() > 200 || used.count(file)) file = "entry-" + std::to_string(index) + ".npy";
        used.insert(file);
        ++index;
        const std::string bytes = encode_npy(t, name);
        write_file((g / file).string(), bytes, fc);
        manifest += "entry " + enc + " " + file + " " + std::to_string(bytes.size()) + " " +
                    hex8(crc_of(bytes.data(), bytes.size())) + " " + dtype_name(t.dtype()) + " " + shape_text(t.shape()) +
                    "\n";
    }
    manifest += "end " + hex8(crc_of(manifest.data(), manifest.size())) + "\n";
    const fs::path tmp = g / (std::string(kManifest) + ".tmp");
    write_file(tmp.string(), manifest, fc);
    // The commit: one rename makes the generation whole.
    if (::rename(tmp.c_str(), (g / kManifest).c_str()) != 0)
        fail("checkpoint", "cannot commit '", g.string(), "' (rename of its MANIFEST): ", std::strerror(errno));
    fc.point();
    fsync_path(g.string(), true);
    fc.point();

    // Keep the new generation and the newest committed one before it.
    for (std::size_t i = 1; i < committed.size(); ++i) {
        remove_generation(committed[i].path);
        fc.point();
    }
    fsync_path(root.string(), true);
    fc.point();
}

LoadedCheckpoint read_checkpoint(const std::string& dir) {
    check_path(dir, "checkpoint");
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) fail("checkpoint", "checkpoint '", dir, "' is not a folder");
    std::vector<std::string> skipped;
    for (const Generation& g : list_generations(dir)) {
        if (!g.committed) {
            skipped.push_back(g.path.filename().string() + ": incomplete (no MANIFEST: a save was interrupted)");
            continue;
        }
        try {
            LoadedCheckpoint c = read_generation(g.path);
            c.skipped = std::move(skipped);
            return c;
        } catch (const Error& e) {
            skipped.push_back(e.what());
        }
    }
    std::string why;
    for (const std::string& s : skipped) why += "; " + s;
    fail("checkpoint", "no loadable checkpoint in '", dir, "'",
         skipped.empty() ? std::string(" (no generation folder)") : ": " + why.substr(2));
}

namespace {

const std::string kModel = "model.", kOptim = "optimizer.";

void add_prefixed(CheckpointData& d, const std::string& prefix, const StateDict& s) {
    for (const auto& [name, t] : s) d.tensors.insert(prefix + name, t);
}

// The entries under `prefix`, without it.
StateDict with_prefix(const StateDict& all, const std::string& prefix) {
    StateDict out;
    for (const auto& [name, t] : all)
        if (name.starts_with(prefix)) out.insert(name.substr(prefix.size()), t);
    return out;
}

}  // namespace

void save_state_dict(const StateDict& dict, const std::string& dir) {
    CheckpointData d;
    add_prefixed(d, kModel, dict);
    write_checkpoint(dir, d);
}

void save_checkpoint(const Module& m, const std::string& dir) { save_state_dict(m.state_dict(), dir); }

void save_checkpoint(const Module& m, const Optimizer& opt, const std::string& dir, const CheckpointInfo& info) {
    if (info.count("optimizer")) fail("optimizer", "save_checkpoint: the info key 'optimizer' is reserved");
    CheckpointData d;
    add_prefixed(d, kModel, m.state_dict());
    add_prefixed(d, kOptim, opt.state_dict());
    d.info = info;
    d.info["optimizer"] = opt.kind();
    write_checkpoint(dir, d);
}

StateDict read_state_dict(const std::string& dir) { return with_prefix(read_checkpoint(dir).tensors, kModel); }

LoadResult load_checkpoint(Module& m, const std::string& dir, bool strict) {
    const StateDict dict = read_state_dict(dir);
    try {
        return m.load_state_dict(dict, strict);
    } catch (const Error& e) {
        throw Error(e.key(), "checkpoint '" + dir + "': " + e.what());
    }
}

LoadedCheckpoint load_checkpoint(Module& m, Optimizer& opt, const std::string& dir) {
    LoadedCheckpoint c = read_checkpoint(dir);
    const auto kind = c.info.find("optimizer");
    if (kind == c.info.end()) fail("optimizer", "checkpoint '", dir, "' holds no optimizer state");
    if (kind->second != opt.kind())
        fail("optimizer", "checkpoint '", dir, "' holds the state of an optimizer of kind ", kind->second, ", not ", opt.kind());
    const StateDict model = with_prefix(c.tensors, kModel), optim = with_prefix(c.tensors, kOptim);
    const StateDict before = m.state_dict().clone();
    try {
        m.load_state_dict(model, true);
        try {
            opt.load_state_dict(optim);
        } catch (...) {
            m.load_state_dict(before, true);
            throw;
        }
    } catch (const Error& e) {
        throw Error(e.key(), "checkpoint '" + dir + "': " + e.what());
    }
    return c;
}

}  // namespace tg::nn
