#include "tapegrad/data/idx.hpp"

#include <sys/stat.h>
#include <zlib.h>

#include <memory>
#include <vector>

namespace tg {

namespace {

struct GzClose {
    void operator()(gzFile_s* f) const { gzclose(f); }
};
using Gz = std::unique_ptr<gzFile_s, GzClose>;

// Reads exactly n bytes (zlib passes plain files through); false at a short file.
bool read_exact(gzFile f, unsigned char* dst, std::int64_t n, const std::string& path) {
    while (n > 0) {
        const unsigned chunk = static_cast<unsigned>(std::min<std::int64_t>(n, 1 << 30));
        const int got = gzread(f, dst, chunk);
        if (got < 0) fail("path", "IDX file '", path, "' is corrupt (gzip read error)");
        if (got == 0) return false;
        dst += got;
        n -= got;
    }
    return true;
}

}  // namespace

Tensor read_idx(const std::string& path, const IdxOptions& opt) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail("path", "cannot open IDX file '", path, "'");
    if (!S_ISREG(st.st_mode)) fail("path", "IDX file '", path, "' is not a regular file");
    Gz f(gzopen(path.c_str(), "rb"));
    if (!f) fail("path", "cannot open IDX file '", path, "'");
    unsigned char head[4];
    if (!read_exact(f.get(), head, 4, path) || head[0] != 0 || head[1] != 0 || head[2] != 0x08)
        fail("path", "'", path, "' is not an IDX file of unsigned bytes");
    const int ndim = head[3];
    if (ndim < 1 || ndim > 4) fail("path", "IDX file '", path, "' has rank ", ndim, ", must be 1 to 4");
    if (opt.rank > 0 && ndim != opt.rank)
        fail("path", "IDX file '", path, "' has rank ", ndim, ", expected ", opt.rank,
             opt.rank == 3 ? " (images [N, rows, cols])" : opt.rank == 1 ? " (labels [N])" : "");
    unsigned char dims[16];
    if (!read_exact(f.get(), dims, 4 * ndim, path)) fail("path", "IDX file '", path, "' ends inside its header");
    Shape shape;
    for (int a = 0; a < ndim; ++a) {
        const unsigned char* p = dims + 4 * a;
        shape.push_back((std::int64_t{p[0]} << 24) | (std::int64_t{p[1]} << 16) | (std::int64_t{p[2]} << 8) | p[3]);
    }
    const std::int64_t n = shape_numel(shape, "path");
    if (n > opt.max_bytes)
        fail("path", "IDX file '", path, "' announces shape ", shape_str(shape), " = ", n, " bytes, over the limit of ",
             opt.max_bytes);
    std::vector<unsigned char> data(static_cast<std::size_t>(n));
    if (!read_exact(f.get(), data.data(), n, path))
        fail("path", "IDX file '", path, "' is shorter than its header's shape ", shape_str(shape), " (", n, " bytes)");
    unsigned char extra;
    if (gzread(f.get(), &extra, 1) != 0)
        fail("path", "IDX file '", path, "' holds more data than its header's shape ", shape_str(shape), " (", n, " bytes)");
    if (ndim == 1) {
        Tensor t = Tensor::empty(shape, DType::i64);
        for (std::int64_t i = 0; i < n; ++i) t.data<std::int64_t>()[i] = data[static_cast<std::size_t>(i)];
        return t;
    }
    Tensor t = Tensor::empty(shape, DType::f32);
    float* out = t.data<float>();
    for (std::int64_t i = 0; i < n; ++i) {
        const float v = data[static_cast<std::size_t>(i)];
        out[i] = opt.scale_to_unit ? v / 255.0f : v;
    }
    return t;
}

Tensor read_idx_images(const std::string& path) { return read_idx(path, {.rank = 3}); }
Tensor read_idx_labels(const std::string& path) { return read_idx(path, {.rank = 1}); }

}  // namespace tg
