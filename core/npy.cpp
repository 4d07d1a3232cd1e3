#include "tapegrad/core/npy.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "tapegrad/core/atomic_file.hpp"
#include "tapegrad/core/convert.hpp"

#include <sys/stat.h>
#include <unistd.h>

namespace tg {

namespace {

struct Header {
    std::string descr;
    bool fortran = false;
    Shape shape;
};

// Parses the Python dict literal of an .npy header: exactly the keys 'descr',
// 'fortran_order' and 'shape', in any order, with optional trailing commas.
class HeaderParser {
public:
    HeaderParser(const std::string& text, const std::string& key, const std::string& path)
        : s_(text), key_(key), path_(path) {}

    Header parse() {
        Header h;
        bool have_descr = false, have_fortran = false, have_shape = false;
        expect('{');
        while (true) {
            skip_ws();
            if (peek() == '}') { ++i_; break; }
            const std::string k = string_lit();
            expect(':');
            if (k == "descr") {
                if (have_descr) bad("duplicate key 'descr'");
                h.descr = string_lit();
                have_descr = true;
            } else if (k == "fortran_order") {
                if (have_fortran) bad("duplicate key 'fortran_order'");
                h.fortran = bool_lit();
                have_fortran = true;
            } else if (k == "shape") {
                if (have_shape) bad("duplicate key 'shape'");
                h.shape = tuple_lit();
                have_shape = true;
            } else {
                bad("unexpected header key '" + k + "'");
            }
            skip_ws();
            if (peek() == ',') { ++i_; continue; }
            if (peek() == '}') { ++i_; break; }
            bad("expected ',' or '}' in header");
        }
        skip_ws();
        if (i_ != s_.size()) bad("trailing characters after the header dict");
        if (!have_descr || !have_fortran || !have_shape) bad("header lacks one of 'descr', 'fortran_order', 'shape'");
        return h;
    }

private:
    [[noreturn]] void bad(const std::string& why) { fail(key_, "malformed .npy header in ", path_, ": ", why); }
    void skip_ws() { while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_; }
    char peek() { return i_ < s_.size() ? s_[i_] : '\0'; }
    void expect(char c) {
        skip_ws();
        if (peek() != c) bad(std::string("expected '") + c + "'");
        ++i_;
    }
    std::string string_lit() {
        skip_ws();
        const char q = peek();
        if (q != '\'' && q != '"') bad("expected a quoted string");
        ++i_;
        std::string out;
        while (i_ < s_.size() && s_[i_] != q) {
            if (s_[i_] == '\\') bad("escapes are not supported in header strings");
            out += s_[i_++];
        }
        if (i_ >= s_.size()) bad("unterminated string");
        ++i_;
        return out;
    }
    bool bool_lit() {
        skip_ws();
        if (s_.compare(i_, 4, "True") == 0) { i_ += 4; return true; }
        if (s_.compare(i_, 5, "False") == 0) { i_ += 5; return false; }
        bad("fortran_order must be True or False");
    }
    Shape tuple_lit() {
        expect('(');
        Shape shape;
        while (true) {
            skip_ws();
            if (peek() == ')') { ++i_; break; }
            if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("shape entries must be non-negative integers");
            std::int64_t v = 0;
            while (std::isdigit(static_cast<unsigned char>(peek()))) {
                const int digit = peek() - '0';
                if (v > (INT64_MAX - digit) / 10) bad("a shape entry overflows int64");
                v = v * 10 + digit;
                ++i_;
            }
            if (peek() == 'L') ++i_;  // Python 2 long suffix
            shape.push_back(v);
            if (shape.size() > 64) bad("more than 64 dimensions");
            skip_ws();
            if (peek() == ',') { ++i_; continue; }
            if (peek() == ')') { ++i_; break; }
            bad("expected ',' or ')' in shape");
        }
        return shape;
    }

    const std::string& s_;
    std::size_t i_ = 0;
    const std::string& key_;
    const std::string& path_;
};

struct Descr {
    DType dtype;
    bool big_endian;
};

Descr parse_descr(const std::string& d, const std::string& key, const std::string& path) {
    if (d.size() == 3 && (d[0] == '<' || d[0] == '>' || d[0] == '=')) {
        const std::string t = d.substr(1);
        const bool be = d[0] == '>';
        if (t == "f8") return {DType::f64, be};
        if (t == "f4") return {DType::f32, be};
        if (t == "f2") return {DType::f16, be};
        if (t == "i4") return {DType::i32, be};
        if (t == "i8") return {DType::i64, be};
    }
    if (d == "|b1") return {DType::b8, false};
    fail(key, "unsupported .npy dtype '", d, "' in ", path, " (expected <f8, <f4, <f2, <i4, <i8 or |b1)");
}

void byteswap(std::byte* p, std::int64_t n, std::size_t es) {
    for (std::int64_t i = 0; i < n; ++i, p += es)
        for (std::size_t a = 0, b = es - 1; a < b; ++a, --b) std::swap(p[a], p[b]);
}

}  // namespace

namespace {

// The validated header of an open .npy file, the stream left at the payload.
struct Parsed {
    Header h;
    Descr descr;
    std::int64_t n = 0, nbytes = 0;
};

Parsed parse_file(std::istream& f, const std::string& path, const std::string& key, const NpyOptions& opt) {
    f.seekg(0, std::ios::end);
    const std::int64_t file_size = static_cast<std::int64_t>(f.tellg());
    f.seekg(0);
    if (file_size < 10) fail(key, "'", path, "' is not a .npy file (", file_size, " bytes)");
    unsigned char pre[12] = {};
    f.read(reinterpret_cast<char*>(pre), 10);
    if (std::memcmp(pre, "\x93NUMPY", 6) != 0) fail(key, "'", path, "' is not a .npy file (bad magic)");
    const int major = pre[6];
    std::int64_t hlen, hstart;
    if (major == 1) {
        hlen = pre[8] | (pre[9] << 8);
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (file_size < 12) fail(key, "truncated .npy header in ", path);
        f.read(reinterpret_cast<char*>(pre + 10), 2);
        hlen = static_cast<std::int64_t>(pre[8]) | (static_cast<std::int64_t>(pre[9]) << 8) |
               (static_cast<std::int64_t>(pre[10]) << 16) | (static_cast<std::int64_t>(pre[11]) << 24);
        hstart = 12;
    } else {
        fail(key, "unsupported .npy format version ", major, ".", int(pre[7]), " in ", path);
    }
    if (hstart + hlen > file_size) fail(key, "truncated .npy header in ", path);
    std::string text(static_cast<std::size_t>(hlen), '\0');
    f.read(text.data(), hlen);
    const Header h = HeaderParser(text, key, path).parse();
    const Descr descr = parse_descr(h.descr, key, path);
    std::int64_t n = 0, nbytes = 0;
    try {
        n = shape_numel(h.shape, key);
        nbytes = checked_mul(n, static_cast<std::int64_t>(dtype_size(descr.dtype)), key);
    } catch (const Error&) {
        fail(key, "'", path, "' has shape ", shape_str(h.shape), " of ", h.descr, ", whose size overflows int64");
    }
    if (nbytes > opt.max_bytes)
        fail(key, "'", path, "' holds ", nbytes, " bytes, over the limit of ", opt.max_bytes);
    if (file_size - hstart - hlen != nbytes)
        fail(key, "'", path, "' has ", file_size - hstart - hlen, " payload bytes but shape ", shape_str(h.shape), " of ",
             h.descr, " needs ", nbytes);
    return {h, descr, n, nbytes};
}

std::ifstream open_npy(const std::string& path, const std::string& key) {
    check_path(path, key);
    // Only regular files: a FIFO would block the reader, a device or /proc file has no size.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail(key, "cannot open .npy file '", path, "'");
    if (!S_ISREG(st.st_mode)) fail(key, ".npy file '", path, "' is not a regular file");
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(key, "cannot open .npy file '", path, "'");
    return f;
}

}  // namespace

NpyInfo read_npy_header(const std::string& path, const std::string& key, const NpyOptions& opt) {
    std::ifstream f = open_npy(path, key);
    const Parsed p = parse_file(f, path, key, opt);
    return {p.h.shape, p.descr.dtype};
}

namespace {

Tensor read_npy_stream(std::istream& f, const std::string& path, const std::string& key, const NpyOptions& opt) {
    const Parsed p = parse_file(f, path, key, opt);
    const Header& h = p.h;
    const Descr& descr = p.descr;
    const std::int64_t n = p.n, nbytes = p.nbytes;
    Tensor t = Tensor::empty(h.shape, descr.dtype);
    f.read(static_cast<char*>(t.raw_data()), nbytes);
    if (!f) fail(key, "read error in '", path, "'");
    if (descr.big_endian) byteswap(static_cast<std::byte*>(t.raw_data()), n, dtype_size(descr.dtype));
    if (h.fortran && h.shape.size() > 1) {
        // Fortran data is the C-order data of the reversed shape, transposed.
        Shape rev(h.shape.rbegin(), h.shape.rend());
        std::vector<int> axes(h.shape.size());
        for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int>(axes.size() - 1 - i);
        t = t.reshape(rev).permute(axes).contiguous();
    }
    return t;
}

}  // namespace

Tensor read_npy(const std::string& path, const std::string& key, const NpyOptions& opt) {
    std::ifstream f = open_npy(path, key);
    return read_npy_stream(f, path, key, opt);
}

Tensor decode_npy(const std::string& bytes, const std::string& name, const std::string& key, const NpyOptions& opt) {
    std::istringstream f(bytes);
    return read_npy_stream(f, name, key, opt);
}

namespace {

// Hands the .npy bytes of `tensor` to sink(const char*, size_t) piece by piece: the header,
// then the payload straight from the tensor's storage. bf16 (which NumPy lacks) is written
// as <f4, converted in slices, so no whole copy of a large result is ever made.
template <class Sink>
void emit_npy(const Tensor& tensor, const std::string& key, Sink&& sink) {
    const Tensor t = tensor.contiguous();
    const char* descr = "";
    switch (t.dtype()) {
        case DType::f64: descr = "<f8"; break;
        case DType::f32: descr = "<f4"; break;
        case DType::f16: descr = "<f2"; break;
        case DType::i32: descr = "<i4"; break;
        case DType::i64: descr = "<i8"; break;
        case DType::bf16: descr = "<f4"; break;
        case DType::b8: descr = "|b1"; break;
    }
    std::string shape = "(";
    for (std::size_t i = 0; i < t.shape().size(); ++i) shape += std::to_string(t.shape()[i]) + (t.shape().size() == 1 ? "," : (i + 1 < t.shape().size() ? ", " : ""));
    shape += ")";
    std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    // Pad with spaces so the payload starts on a 64-byte boundary, as NumPy does.
    const std::size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    if (header.size() > 65535) fail(key, "header too long for .npy version 1.0");
    const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<unsigned char>(header.size() & 0xff),
                                   static_cast<unsigned char>(header.size() >> 8)};
    sink(reinterpret_cast<const char*>(pre), std::size_t{10});
    sink(header.data(), header.size());
    if (t.dtype() != DType::bf16) {
        sink(static_cast<const char*>(t.raw_data()), static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
        return;
    }
    constexpr std::int64_t kSlice = std::int64_t{1} << 16;
    std::vector<float> f32(static_cast<std::size_t>(std::min(t.numel(), kSlice)));
    const auto* src = static_cast<const std::uint16_t*>(t.raw_data());
    for (std::int64_t i = 0; i < t.numel(); i += kSlice) {
        const std::int64_t n = std::min(kSlice, t.numel() - i);
        bf16_to_f32_n(src + i, f32.data(), n);
        sink(reinterpret_cast<const char*>(f32.data()), static_cast<std::size_t>(n) * sizeof(float));
    }
}

// Writes the .npy bytes of `tensor` to a new temporary file beside `path` and returns its name.
std::string write_temp(const std::string& path, const Tensor& tensor, const std::string& key) {
    check_output_target(path, key);
    const std::string tmp = create_temp_beside(path, key);
    try {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        emit_npy(tensor, key, [&](const char* p, std::size_t n) { out.write(p, static_cast<std::streamsize>(n)); });
        out.flush();
        if (!out) fail(key, "error while writing '", path, "'");
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
    return tmp;
}

}  // namespace

std::string encode_npy(const Tensor& tensor, const std::string& key) {
    std::string out;
    emit_npy(tensor, key, [&](const char* p, std::size_t n) { out.append(p, n); });
    return out;
}

NpyWriteSet::~NpyWriteSet() {
    for (const auto& [path, tmp] : staged_) std::remove(tmp.c_str());
}

void NpyWriteSet::stage(const std::string& path, const Tensor& t, const std::string& key) {
    staged_.emplace_back(path, write_temp(path, t, key));
}

void NpyWriteSet::commit() {
    for (std::size_t i = 0; i < staged_.size(); ++i) {
        const auto& [path, tmp] = staged_[i];
        move_into_place(tmp, path, "output");
        staged_[i].second.clear();
    }
    staged_.clear();
}

void write_npy(const std::string& path, const Tensor& t, const std::string& key) {
    NpyWriteSet set;
    set.stage(path, t, key);
    set.commit();
}

void check_path(const std::string& path, const std::string& key) {
    if (path.empty()) fail(key, key, ": the path is empty");
    if (path.find('\0') != std::string::npos)
        fail(key, key, ": the path '", path.substr(0, path.find('\0')), "' contains a NUL byte");
    if (path.size() > 4096) fail(key, key, ": the path is ", path.size(), " bytes long, over 4096");
}

void check_output_target(const std::string& path, const std::string& key) {
    check_path(path, key);
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        fail(key, key, " '", path, "' exists and is not a regular file (",
             S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory" : "a device, FIFO or socket",
             "); tapegrad replaces only regular files");
}

}  // namespace tg
