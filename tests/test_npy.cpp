// The strict .npy reader and the atomic writer. Files the reader must accept or refuse are
// written byte by byte here, so the tests do not depend on our own writer or on NumPy.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "tapegrad/core/npy.hpp"
#include "tapegrad/core/tensor.hpp"
#include "support_files.hpp"

using namespace tg;
using tg::testsov::le;
using tg::testsov::npy_bytes;
using tg::testsov::TempDir;
using tg::testsov::write_bytes;

namespace {

std::string f64_le(const std::vector<double>& v) {
    std::string s;
    for (double d : v) {
        std::uint64_t b;
        std::memcpy(&b, &d, 8);
        s += le(b, 8);
    }
    return s;
}

std::string be(std::uint64_t v, int n) {
    std::string s = le(v, n);
    return std::string(s.rbegin(), s.rend());
}

// Expects read_npy to throw tg::Error naming `key`; returns the message.
std::string read_error(const std::string& path, const std::string& key = "data.npy", const NpyOptions& opt = {}) {
    try {
        read_npy(path, key, opt);
    } catch (const Error& e) {
        CHECK(e.key() == key);
        return e.what();
    } catch (const std::exception& e) {
        FAIL("read_npy threw a non-tg::Error: " << e.what());
    }
    FAIL("read_npy accepted " << path);
    return "";
}

std::string malformed_error(const TempDir& dir, const std::string& bytes, const NpyOptions& opt = {}) {
    const std::string p = dir / "bad.npy";
    write_bytes(p, bytes);
    return read_error(p, "bad", opt);
}

const std::string kDict23 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";

}  // namespace

TEST_CASE("npy round trip for every dtype and several shapes", "[npy]") {
    TempDir dir;
    const std::vector<Shape> shapes{{}, {1}, {5}, {2, 3}, {2, 1, 3, 2}, {0}, {0, 3}, {3, 0, 2}};
    for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64})
        for (const Shape& s : shapes) {
            INFO(dtype_name(dt) << " " << shape_str(s));
            std::vector<double> v(static_cast<std::size_t>(shape_numel(s)));
            for (std::size_t i = 0; i < v.size(); ++i) v[i] = is_float(dt) ? (static_cast<double>(i) - 2.5) * 0.75 : double(i) * 1000 - 7;
            if (dt == DType::i64 && !v.empty()) v[0] = -9007199254740992.0;  // -2^53: beyond int32
            const Tensor t = Tensor::from(s, v, dt);
            const std::string p = dir / "t.npy";
            write_npy(p, t);
            const Tensor r = read_npy(p);
            CHECK(r.shape() == s);
            CHECK(r.dtype() == (dt == DType::bf16 ? DType::f32 : dt));  // NumPy has no bf16
            CHECK(r.values() == t.values());
            // Version 1.0 header, payload aligned to 64 bytes as NumPy writes it.
            const std::string bytes = tg::testsov::read_text(p);
            REQUIRE(bytes.size() >= 10);
            CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
            const std::size_t hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
            CHECK((10 + hlen) % 64 == 0);
            CHECK(bytes.size() == 10 + hlen + static_cast<std::size_t>(t.numel()) * (dt == DType::bf16 ? 4 : dtype_size(dt)));
        }
    SECTION("a strided view is written in C order") {
        const Tensor t = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6}, DType::f64).permute({1, 0});
        write_npy(dir / "p.npy", t);
        const Tensor r = read_npy(dir / "p.npy");
        CHECK(r.shape() == Shape{3, 2});
        CHECK(r.values() == std::vector<double>{1, 4, 2, 5, 3, 6});
    }
}

TEST_CASE("npy versions 1.0, 2.0 and 3.0, keys in any order, odd spacing", "[npy]") {
    TempDir dir;
    const std::string payload = f64_le({1, 2, 3, 4, 5, 6});
    const std::vector<std::string> dicts{
        kDict23,
        "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f8'}",
        "{'fortran_order': False, 'shape': (2,3), 'descr': '<f8',}",
        "{ \"descr\" : \"<f8\" ,\"shape\":( 2 , 3 ) , \"fortran_order\":False }",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 3L), }",  // Python 2 longs
    };
    for (int major : {1, 2, 3})
        for (const std::string& d : dicts) {
            INFO("version " << major << ", header " << d);
            const std::string p = dir / "v.npy";
            write_bytes(p, npy_bytes(d, payload, major));
            const Tensor t = read_npy(p);
            CHECK(t.dtype() == DType::f64);
            CHECK(t.shape() == Shape{2, 3});
            CHECK(t.values() == std::vector<double>{1, 2, 3, 4, 5, 6});
        }
    SECTION("scalar and 1-element shapes") {
        write_bytes(dir / "s.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': ()}", f64_le({7})));
        const Tensor s = read_npy(dir / "s.npy");
        CHECK(s.shape().empty());
        CHECK(s.item() == 7);
        write_bytes(dir / "o.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1,)}", f64_le({8})));
        CHECK(read_npy(dir / "o.npy").shape() == Shape{1});
    }
    SECTION("a header that is not padded to 64 bytes is still read") {
        std::string h = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,)}\n";
        write_bytes(dir / "u.npy", std::string("\x93NUMPY\x01\x00", 8) + le(h.size(), 2) + h + le(5, 4) + le(0xfffffffau, 4));
        const Tensor t = read_npy(dir / "u.npy");
        CHECK(t.dtype() == DType::i32);
        CHECK(t.values() == std::vector<double>{5, -6});
    }
}

TEST_CASE("npy Fortran order is reordered to C order", "[npy]") {
    TempDir dir;
    // C-order [[1,2,3],[4,5,6]] stored column by column.
    write_bytes(dir / "f.npy", npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", f64_le({1, 4, 2, 5, 3, 6})));
    const Tensor t = read_npy(dir / "f.npy");
    CHECK(t.shape() == Shape{2, 3});
    CHECK(t.values() == std::vector<double>{1, 2, 3, 4, 5, 6});
    // 3-D: element (i, j, k) = 100i + 10j + k sits at Fortran offset i + 2j + 6k.
    std::vector<double> f(2 * 3 * 4);
    std::vector<double> c;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 4; ++k) {
                f[static_cast<std::size_t>(i + 2 * j + 6 * k)] = 100 * i + 10 * j + k;
                c.push_back(100 * i + 10 * j + k);
            }
    write_bytes(dir / "f3.npy", npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3, 4), }", f64_le(f), 2));
    const Tensor t3 = read_npy(dir / "f3.npy");
    CHECK(t3.shape() == Shape{2, 3, 4});
    CHECK(t3.values() == c);
    // 1-D Fortran is the same as C.
    write_bytes(dir / "f1.npy", npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (3,), }", f64_le({1, 2, 3})));
    CHECK(read_npy(dir / "f1.npy").values() == std::vector<double>{1, 2, 3});
}

TEST_CASE("npy big-endian data is byte-swapped", "[npy]") {
    TempDir dir;
    auto dict = [](const std::string& d, const std::string& shape) {
        return "{'descr': '" + d + "', 'fortran_order': False, 'shape': " + shape + ", }";
    };
    double minus_two_and_half = -2.5;
    std::uint64_t db;
    std::memcpy(&db, &minus_two_and_half, 8);
    float one_and_quarter = 1.25f;
    std::uint32_t fb;
    std::memcpy(&fb, &one_and_quarter, 4);
    struct Case {
        std::string descr, payload;
        DType dtype;
        std::vector<double> want;
    };
    const std::vector<Case> cases{
        {">f8", be(db, 8) + be(0x3ff0000000000000ull, 8), DType::f64, {-2.5, 1.0}},
        {">f4", be(fb, 4) + be(0xc0000000u, 4), DType::f32, {1.25, -2.0}},
        {">f2", be(0x3c00, 2) + be(0xc100, 2), DType::f16, {1.0, -2.5}},
        {">i4", be(0x01020304u, 4) + be(0xffffffffu, 4), DType::i32, {16909060, -1}},
        {">i8", be(0x0000000100000000ull, 8) + be(0xfffffffffffffffeull, 8), DType::i64, {4294967296.0, -2}},
        {"<f2", le(0x3c00, 2) + le(0x7bff, 2), DType::f16, {1.0, 65504.0}},
        {"<i8", le(0x0000000100000000ull, 8) + le(0xfffffffffffffffeull, 8), DType::i64, {4294967296.0, -2}},
    };
    for (const Case& c : cases) {
        INFO(c.descr);
        write_bytes(dir / "b.npy", npy_bytes(dict(c.descr, "(2,)"), c.payload));
        const Tensor t = read_npy(dir / "b.npy");
        CHECK(t.dtype() == c.dtype);
        CHECK(t.values() == c.want);
    }
    SECTION("big-endian and Fortran order together") {
        std::string p;
        for (double v : {1.0, 4.0, 2.0, 5.0, 3.0, 6.0}) {
            std::uint64_t b;
            std::memcpy(&b, &v, 8);
            p += be(b, 8);
        }
        write_bytes(dir / "bf.npy", npy_bytes("{'descr': '>f8', 'fortran_order': True, 'shape': (2, 3), }", p, 3));
        CHECK(read_npy(dir / "bf.npy").values() == std::vector<double>{1, 2, 3, 4, 5, 6});
    }
}

TEST_CASE("npy malformed files throw tg::Error naming the key", "[npy]") {
    TempDir dir;
    const std::string good6 = f64_le({1, 2, 3, 4, 5, 6});
    SECTION("payload") {
        CHECK_THAT(malformed_error(dir, npy_bytes(kDict23, good6.substr(0, 40))), Catch::Contains("payload"));
        CHECK_THAT(malformed_error(dir, npy_bytes(kDict23, "")), Catch::Contains("payload"));
        CHECK_THAT(malformed_error(dir, npy_bytes(kDict23, good6 + "x")), Catch::Contains("payload"));
    }
    SECTION("header") {
        const std::string full = npy_bytes(kDict23, good6);
        malformed_error(dir, full.substr(0, 40));  // cut inside the header
        malformed_error(dir, full.substr(0, 9));   // cut inside the preamble
        malformed_error(dir, full.substr(0, 10));  // header length says more is coming
        malformed_error(dir, std::string("\x93NUMPY\x02\x00\x10", 9));  // v2 preamble cut
        malformed_error(dir, std::string("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12));  // absurd header length
        malformed_error(dir, "");
    }
    SECTION("magic and version") {
        std::string b = npy_bytes(kDict23, good6);
        b[5] = 'X';
        CHECK_THAT(malformed_error(dir, b), Catch::Contains("magic"));
        CHECK_THAT(malformed_error(dir, "PK\x03\x04 this is a zip file, not an npy file at all"), Catch::Contains("magic"));
        std::string v4 = npy_bytes(kDict23, good6);
        v4[6] = 4;
        CHECK_THAT(malformed_error(dir, v4), Catch::Contains("version"));
        std::string v0 = npy_bytes(kDict23, good6);
        v0[6] = 0;
        malformed_error(dir, v0);
    }
    SECTION("dtypes") {
        for (const std::string d : {"<u1", "<c8", "<f16", "<u8", "|u1", "float64", "<f", "", "<M8[s]", "O"}) {
            INFO("descr '" << d << "'");
            CHECK_THAT(malformed_error(dir, npy_bytes("{'descr': '" + d + "', 'fortran_order': False, 'shape': (2,), }", std::string(16, '\0'))),
                       Catch::Contains("dtype"));
        }
    }
    SECTION("absurd shapes") {
        // products that overflow int64 (elements, or elements times the element size)
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3037000500, 3037000500), }", ""));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }", ""));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }", ""));
        // a product overflow hidden behind a zero must not matter: the tensor is empty
        write_bytes(dir / "z.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3037000500), }", ""));
        CHECK(read_npy(dir / "z.npy").numel() == 0);
    }
    SECTION("sizes over the limit fail before anything is allocated") {
        // 2^43 bytes with the default limit: refused on the header alone (no bad_alloc, no
        // payload check first).
        CHECK_THAT(malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }", "")),
                   Catch::Contains("limit"));
        // A complete, well-formed 48-byte payload over a 40-byte limit.
        NpyOptions small;
        small.max_bytes = 40;
        CHECK_THAT(malformed_error(dir, npy_bytes(kDict23, good6), small), Catch::Contains("limit"));
        small.max_bytes = 48;
        write_bytes(dir / "ok.npy", npy_bytes(kDict23, good6));
        CHECK(read_npy(dir / "ok.npy", "k", small).numel() == 6);
    }
    SECTION("keys") {
        const std::string p16(16, '\0');
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", p16));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'fortran_order': False, 'shape': (2,), }", p16));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'shape': (2,)}", p16));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'shape': (2,), }", p16));               // missing fortran_order
        malformed_error(dir, npy_bytes("{'fortran_order': False, 'shape': (2,), }", p16));       // missing descr
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, }", p16));      // missing shape
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'extra': 1}", p16));
        malformed_error(dir, npy_bytes("{}", p16));
    }
    SECTION("values and syntax") {
        const std::string p16(16, '\0');
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }", p16));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, -1), }", p16));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2.0,), }", p16));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': [2], }", p16));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': 0, 'shape': (2,), }", p16));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': false, 'shape': (2,), }", p16));
        malformed_error(dir, npy_bytes("{'descr': <f8, 'fortran_order': False, 'shape': (2,), }", p16));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), } junk", p16));
        malformed_error(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,)", p16));
        malformed_error(dir, npy_bytes("{'descr': '<f8 'fortran_order': False, 'shape': (2,)}", p16));
        malformed_error(dir, npy_bytes("('descr', '<f8')", p16));
    }
    SECTION("files that are not there or not files") {
        read_error(dir / "missing.npy");
        read_error(dir.path().string());
    }
}

TEST_CASE("npy writer is atomic: a failed write leaves no file and no temporary", "[npy]") {
    TempDir dir;
    const Tensor t = Tensor::from({2, 2}, {1, 2, 3, 4}, DType::f64);
    SECTION("into a directory that does not exist") {
        const std::string p = dir / "no/such/dir/out.npy";
        try {
            write_npy(p, t, "grad_inputs[1]");
            FAIL("write_npy wrote into a missing directory");
        } catch (const Error& e) {
            CHECK(e.key() == "grad_inputs[1]");
        }
        CHECK(dir.files().empty());
    }
    SECTION("onto a path that is a directory: the rename fails after the temporary was written") {
        tg::testsov::fs::create_directory(dir / "target.npy");
        CHECK_THROWS_AS(write_npy(dir / "target.npy", t), Error);
        CHECK(dir.files() == std::set<std::string>{"target.npy"});
        CHECK(tg::testsov::fs::is_empty(dir / "target.npy"));
    }
    SECTION("over an existing file: the new contents replace the old ones") {
        write_bytes(dir / "out.npy", "old contents");
        write_npy(dir / "out.npy", t);
        CHECK(read_npy(dir / "out.npy").values() == std::vector<double>{1, 2, 3, 4});
        CHECK(dir.files() == std::set<std::string>{"out.npy"});
    }
}
