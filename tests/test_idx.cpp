// The IDX reader (tapegrad/data/idx.hpp) on hand-written files, plain and gzip-compressed, and on the
// real Fashion-MNIST files: values and shapes, then every way a file can be wrong, each
// refused with an error that names the file before anything large is allocated.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <zlib.h>

#include "support_files.hpp"
#include "tapegrad/data/idx.hpp"

using namespace tg;
using tg::testsov::TempDir;
using tg::testsov::write_bytes;

namespace {

std::string be32(std::uint32_t v) {
    return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

// An IDX header of unsigned bytes with these dims, then `data`.
std::string idx_bytes(const std::vector<std::uint32_t>& dims, const std::string& data) {
    std::string s{'\0', '\0', '\x08', static_cast<char>(dims.size())};
    for (std::uint32_t d : dims) s += be32(d);
    return s + data;
}

void write_gzip(const std::string& path, const std::string& bytes) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f);
    if (!bytes.empty()) REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
    gzclose(f);
}

}  // namespace

TEST_CASE("IDX: images and labels, plain and gzip, with their values", "[idx]") {
    TempDir dir;
    const std::string px{'\0', '\x33', '\xff', '\x66', '\x99', '\xcc'};
    write_bytes(dir / "img", idx_bytes({1, 2, 3}, px));
    write_gzip(dir / "img.gz", idx_bytes({1, 2, 3}, px));
    for (const std::string name : {"img", "img.gz"}) {
        const Tensor t = read_idx_images(dir / name);
        CHECK(t.shape() == Shape{1, 2, 3});
        CHECK(t.dtype() == DType::f32);
        const std::vector<double> v = t.values();
        CHECK(v[0] == 0);
        CHECK(v[1] == Approx(0.2));
        CHECK(v[2] == 1);
        CHECK(v[5] == Approx(0.8));
    }
    CHECK(read_idx(dir / "img", {.scale_to_unit = false}).values()[2] == 255);
    write_gzip(dir / "lab.gz", idx_bytes({3}, std::string{'\x07', '\0', '\x09'}));
    const Tensor l = read_idx_labels(dir / "lab.gz");
    CHECK(l.dtype() == DType::i64);
    CHECK(l.values() == std::vector<double>{7, 0, 9});
}

TEST_CASE("IDX: wrong rank, short, long, bombs and non-files are refused, naming the file", "[idx]") {
    TempDir dir;
    // A 2-D file where images [N, rows, cols] are expected (the batch gather overflowed on it).
    write_bytes(dir / "flat", idx_bytes({2, 3}, std::string(6, '\1')));
    CHECK_THROWS_WITH(read_idx_images(dir / "flat"), Catch::Contains("flat") && Catch::Contains("rank 2, expected 3"));
    CHECK_THROWS_WITH(read_idx_labels(dir / "flat"), Catch::Contains("rank 2, expected 1"));
    // Shorter and longer than the header says.
    write_bytes(dir / "short", idx_bytes({1, 2, 3}, std::string(5, '\1')));
    CHECK_THROWS_WITH(read_idx_images(dir / "short"), Catch::Contains("short") && Catch::Contains("shorter"));
    write_gzip(dir / "long.gz", idx_bytes({1, 2, 3}, std::string(7, '\1')));
    CHECK_THROWS_WITH(read_idx_images(dir / "long.gz"), Catch::Contains("long.gz") && Catch::Contains("more data"));
    // Not IDX, a truncated header, a bad rank byte.
    write_bytes(dir / "text", "hello world");
    CHECK_THROWS_WITH(read_idx(dir / "text"), Catch::Contains("not an IDX file"));
    write_bytes(dir / "trunc", std::string{'\0', '\0', '\x08', '\x03', '\0', '\0'});
    CHECK_THROWS_WITH(read_idx(dir / "trunc"), Catch::Contains("ends inside its header"));
    write_bytes(dir / "rank9", std::string{'\0', '\0', '\x08', '\x09'});
    CHECK_THROWS_WITH(read_idx(dir / "rank9"), Catch::Contains("rank 9"));
    // A small gzip that would expand to 60000·1000·1000 bytes: refused from its header alone.
    write_gzip(dir / "bomb.gz", idx_bytes({60000, 1000, 1000}, std::string(4096, '\0')));
    CHECK_THROWS_WITH(read_idx_images(dir / "bomb.gz"), Catch::Contains("bomb.gz") && Catch::Contains("over the limit"));
    // The bound is the caller's to set.
    write_bytes(dir / "ok", idx_bytes({1, 2, 3}, std::string(6, '\1')));
    CHECK_THROWS_WITH(read_idx(dir / "ok", {.max_bytes = 5}), Catch::Contains("over the limit of 5"));
    // A directory, a FIFO (which would block a reader) and a missing file.
    CHECK_THROWS_WITH(read_idx(dir.path().string()), Catch::Contains("not a regular file"));
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    CHECK_THROWS_WITH(read_idx(dir / "fifo"), Catch::Contains("fifo") && Catch::Contains("not a regular file"));
    CHECK_THROWS_WITH(read_idx(dir / "missing"), Catch::Contains("cannot open"));
}

TEST_CASE("IDX: the Fashion-MNIST test set reads whole", "[idx]") {
    const std::string root = "/usr/share/datasets/fashion-mnist";
    const Tensor x = read_idx_images(root + "/t10k-images-idx3-ubyte.gz");
    const Tensor y = read_idx_labels(root + "/t10k-labels-idx1-ubyte.gz");
    CHECK(x.shape() == Shape{10000, 28, 28});
    CHECK(y.shape() == Shape{10000});
    const std::vector<double> labels = y.values();
    for (double c : labels) REQUIRE((c >= 0 && c <= 9));
}
