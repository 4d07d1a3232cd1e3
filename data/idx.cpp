#include "tapegrad/data/idx.hpp"

#include <zlib.h>

#include <vector>

namespace tg {

namespace {

// Reads the whole (possibly gzip-compressed) file; zlib passes plain files through.
std::vector<unsigned char> slurp(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) fail("path", "cannot open IDX file '", path, "'");
    std::vector<unsigned char> out;
    unsigned char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
    const bool bad = n < 0;
    gzclose(f);
    if (bad) fail("path", "'", path, "' is corrupt (gzip read error)");
    return out;
}

}  // namespace

Tensor read_idx(const std::string& path, bool scale_to_unit) {
    const std::vector<unsigned char> b = slurp(path);
    if (b.size() < 4 || b[0] != 0 || b[1] != 0 || b[2] != 0x08)
        fail("path", "'", path, "' is not an IDX file of unsigned bytes");
    const int ndim = b[3];
    if (ndim < 1 || ndim > 4 || b.size() < 4u + 4u * ndim) fail("path", "'", path, "' has a bad IDX header");
    Shape shape;
    for (int a = 0; a < ndim; ++a) {
        const unsigned char* p = &b[4 + 4 * a];
        shape.push_back((std::int64_t{p[0]} << 24) | (p[1] << 16) | (p[2] << 8) | p[3]);
    }
    const std::int64_t n = shape_numel(shape, "path");
    if (static_cast<std::int64_t>(b.size()) != 4 + 4 * ndim + n)
        fail("path", "'", path, "' holds ", b.size() - 4 - 4 * ndim, " bytes of data, shape ", shape_str(shape), " needs ", n);
    const unsigned char* data = b.data() + 4 + 4 * ndim;
    if (ndim == 1) {
        Tensor t = Tensor::empty(shape, DType::i64);
        for (std::int64_t i = 0; i < n; ++i) t.data<std::int64_t>()[i] = data[i];
        return t;
    }
    Tensor t = Tensor::empty(shape, DType::f32);
    for (std::int64_t i = 0; i < n; ++i) t.data<float>()[i] = scale_to_unit ? data[i] / 255.0f : data[i];
    return t;
}

}  // namespace tg
