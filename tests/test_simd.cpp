// tapegrad's own f32 GEMM at every instruction set the CPU has, against an f64 product of
// the same (f32) operands: every shape class (micro-tile edges, one or several K/M/N blocks,
// both transpose flags, alpha/beta, A packed once or per call), and beta = 0 never reading C.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "tapegrad/core/blas.hpp"
#include "isas.hpp"
#include "tapegrad/core/simd.hpp"
#include "tapegrad/ops/conv_small_kernels.hpp"
#include "tapegrad/ops/vec.hpp"

using namespace tg;

namespace {

struct GemmCase {
    std::int64_t M, N, K;
};

// `packed`: through a PackedA (op(A) packed once, as the conv kernels do with the weight),
// packed by `pack_team` threads.
void check_gemm(const GemmCase& c, bool ta, bool tb, float alpha, float beta, std::mt19937_64& rng, const std::string& what,
                bool packed = false, int pack_team = 1) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    const std::int64_t lda = (ta ? c.M : c.K) + 3, ldb = (tb ? c.K : c.N) + 5, ldc = c.N + 7;  // padded strides
    std::vector<float> A((ta ? c.K : c.M) * lda), B((tb ? c.N : c.K) * ldb), C(c.M * ldc);
    for (float& v : A) v = u(rng);
    for (float& v : B) v = u(rng);
    for (float& v : C) v = beta == 0.f ? std::numeric_limits<float>::quiet_NaN() : u(rng);
    const std::vector<float> C0 = C;
    if (packed) gemm<float>(PackedA<float>(ta, c.M, c.K, A.data(), lda, pack_team), tb, c.N, alpha, B.data(), ldb, beta, C.data(), ldc);
    else gemm<float>(ta, tb, c.M, c.N, c.K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
    std::int64_t bad = 0;
    std::ostringstream first;
    for (std::int64_t i = 0; i < c.M; ++i)
        for (std::int64_t j = 0; j < c.N; ++j) {
            double s = 0, mag = 0;
            for (std::int64_t k = 0; k < c.K; ++k) {
                const double a = ta ? A[k * lda + i] : A[i * lda + k], b = tb ? B[j * ldb + k] : B[k * ldb + j];
                s += a * b;
                mag += std::fabs(a * b);
            }
            const double c0 = beta == 0.f ? 0.0 : static_cast<double>(C0[i * ldc + j]);
            const double want = alpha * s + beta * c0;
            const double tol = (static_cast<double>(c.K) + 4) * 6e-8 * (std::fabs(alpha) * mag + std::fabs(beta * c0)) + 1e-30;
            if (!(std::fabs(C[i * ldc + j] - want) <= tol) && bad++ == 0)
                first << "C[" << i << "," << j << "] = " << C[i * ldc + j] << ", want " << want << " (tol " << tol << ")";
        }
    // Padding between rows of C is never written.
    for (std::int64_t i = 0; i < c.M; ++i)
        for (std::int64_t j = c.N; j < ldc; ++j)
            if (!(C[i * ldc + j] == C0[i * ldc + j] || (std::isnan(C[i * ldc + j]) && std::isnan(C0[i * ldc + j]))))
                ++bad;
    INFO(what << ": " << bad << " bad elements; first: " << first.str());
    CHECK(bad == 0);
}

}  // namespace

TEST_CASE("f32 GEMM matches the f64 product at every instruction set", "[simd][gemm]") {
    const simd::Isa before = simd::active();
    std::mt19937_64 rng(5);
    // Micro-tile edges (AVX2 6×16, AVX-512 12×32) and each edge kernel (a third, two thirds
    // or all of the rows, one or two vectors of columns; full and partial), several K blocks
    // (KC = 256), several M blocks (MC = 168) and N blocks (NC = 3072), and degenerate sizes.
    const std::vector<GemmCase> cases = {{1, 1, 1},     {5, 7, 3},     {6, 16, 8},   {12, 32, 9},   {13, 33, 17},
                                     {37, 45, 29},  {169, 65, 300}, {200, 40, 513}, {24, 3100, 5}, {3, 2, 0},
                                     {4, 16, 7},    {8, 48, 20},   {32, 48, 300}, {64, 80, 33},  {20, 24, 10},
                                     {2, 8, 4},     {10, 9, 6}};
    for (simd::Isa isa : tg::testing::tested_isas()) {
        simd::force(isa);
        for (const GemmCase& c : cases)
            for (int t = 0; t < 4; ++t) {
                const bool ta = t & 1, tb = t & 2;
                std::ostringstream what;
                what << simd::isa_name(isa) << " M=" << c.M << " N=" << c.N << " K=" << c.K << " ta=" << ta << " tb=" << tb;
                check_gemm(c, ta, tb, 1.f, 0.f, rng, what.str() + " alpha=1 beta=0");
                check_gemm(c, ta, tb, -0.5f, 1.f, rng, what.str() + " alpha=-0.5 beta=1");
                check_gemm(c, ta, tb, 2.f, 0.25f, rng, what.str() + " alpha=2 beta=0.25");
                check_gemm(c, ta, tb, 1.f, 0.f, rng, what.str() + " packed A, alpha=1 beta=0", true);
                check_gemm(c, ta, tb, -0.5f, 1.f, rng, what.str() + " packed A, alpha=-0.5 beta=1", true);
            }
    }
    simd::force(before);
}

// A team packs op(A) in pieces (blocks of depth, parts of rows where the depth has few
// blocks): from 2^15 elements on, whole and partial KC blocks, row parts ending inside a
// micro-panel, both transposes, teams of 2 and 3.
TEST_CASE("A packed by a team of threads gives the GEMM's product at every instruction set", "[simd][gemm]") {
    const testing::IsaGuard guard;
    std::mt19937_64 rng(11);
    const std::vector<GemmCase> cases = {{169, 65, 300}, {200, 40, 513}, {37, 20, 1000}, {500, 8, 70}, {1000, 33, 37}};
    for (simd::Isa isa : testing::tested_isas()) {
        simd::force(isa);
        for (const GemmCase& c : cases)
            for (int team : {2, 3})
                for (bool ta : {false, true}) {
                    std::ostringstream what;
                    what << simd::isa_name(isa) << " M=" << c.M << " N=" << c.N << " K=" << c.K << " ta=" << ta << " team=" << team;
                    check_gemm(c, ta, false, 1.f, 0.f, rng, what.str(), true, team);
                }
    }
}

// gemm_row_blocks: blocks in order that cover A's rows in whole units, each at most
// gemm_block_rows rows, every block's rows of C the f64 product's when done() sees them;
// a unit that does not divide A's rows is refused by name.
TEST_CASE("the GEMM in blocks of rows hands over each block in order, exact, at every instruction set", "[simd][gemm]") {
    const testing::IsaGuard guard;
    std::mt19937_64 rng(17);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    struct RowCase {
        std::int64_t M, N, K, unit;
        bool trans, blocked;  // blocked: more than one block on tapegrad's own GEMM
    };
    // Units of 1, 9, 16, 27 rows against MR = 6 / 12; K over one and several KC blocks; N past NR.
    const std::vector<RowCase> cases = {{108, 576, 6, 9, true, true},   {160, 384, 8, 16, true, true},
                                        {270, 250, 300, 27, false, true}, {30, 2000, 4, 1, true, true},
                                        {96, 1030, 600, 16, false, true}, {7, 5, 3, 7, true, false}};
    for (simd::Isa isa : testing::tested_isas()) {
        simd::force(isa);
        for (const RowCase& c : cases) {
            const std::int64_t lda = (c.trans ? c.M : c.K) + 2, ldb = c.N + 3, ldc = c.N + 1;
            std::vector<float> A((c.trans ? c.K : c.M) * lda), B(c.K * ldb);
            for (float& v : A) v = u(rng);
            for (float& v : B) v = u(rng);
            const std::int64_t rows = gemm_block_rows(c.M, c.unit, c.N, sizeof(float));
            std::vector<float> C(rows * ldc, std::numeric_limits<float>::quiet_NaN());
            std::int64_t next = 0, bad = 0, blocks = 0;
            const PackedA<float> a(c.trans, c.M, c.K, A.data(), lda);
            gemm_row_blocks<float>(a, c.unit, c.N, B.data(), ldb, C.data(), ldc, [&](std::int64_t r0, std::int64_t r1) {
                ++blocks;
                CHECK(r0 == next);
                CHECK(r1 > r0);
                CHECK(r1 - r0 <= rows);
                CHECK(r0 % c.unit == 0);
                CHECK(r1 % c.unit == 0);
                next = r1;
                for (std::int64_t i = r0; i < r1; ++i)
                    for (std::int64_t j = 0; j < c.N; ++j) {
                        double s = 0, mag = 0;
                        for (std::int64_t k = 0; k < c.K; ++k) {
                            const double p = double(c.trans ? A[k * lda + i] : A[i * lda + k]) * double(B[k * ldb + j]);
                            s += p;
                            mag += std::fabs(p);
                        }
                        if (!(std::fabs(C[(i - r0) * ldc + j] - s) <= (c.K + 4) * 6e-8 * mag + 1e-30)) ++bad;
                    }
            });
            INFO(simd::isa_name(isa) << " M=" << c.M << " N=" << c.N << " K=" << c.K << " unit=" << c.unit << ": " << blocks
                                     << " blocks of at most " << rows << " rows");
            CHECK(next == c.M);
            CHECK(bad == 0);
            // Blocks on tapegrad's own GEMM (AVX2, AVX-512); one on OpenBLAS (scalar).
            CHECK(blocks == (isa != simd::Isa::scalar && c.blocked ? (c.M + rows - 1) / rows : 1));
            if (isa != simd::Isa::scalar && c.blocked) CHECK(blocks > 1);
        }
    }
    const std::vector<float> A(12 * 5, 1.f);
    const PackedA<float> a(false, 12, 5, A.data(), 5);
    CHECK_THROWS_WITH(gemm_row_blocks<float>(a, 5, 3, A.data(), 3, nullptr, 3, [](std::int64_t, std::int64_t) {}),
                      Catch::Contains("unit 5 does not divide the 12 rows"));
}

TEST_CASE("simd::Dispatch hands out the table of the set in use, and follows force()", "[simd]") {
    struct Table {
        const char* name;
    };
    static const Table scalar{"scalar"}, avx2{"avx2"}, avx512{"avx512"};
    static const simd::Dispatch<Table> d{scalar, avx2, avx512};
    CHECK(&d.on(simd::Isa::scalar) == &scalar);
    CHECK(&d.on(simd::Isa::avx2) == &avx2);
    CHECK(&d.on(simd::Isa::avx512) == &avx512);
    testing::IsaGuard guard;
    for (simd::Isa isa : testing::tested_isas()) {
        simd::force(isa);
        CHECK(std::string(d.active().name) == simd::isa_name(isa));
    }
}

TEST_CASE("the instruction-set switch names what it does and refuses unknown sets", "[simd]") {
    const std::vector<simd::Isa> a = simd::available();
    REQUIRE(!a.empty());
    CHECK(a.front() == simd::Isa::scalar);
    CHECK(simd::parse_isa("avx512") == simd::Isa::avx512);
    CHECK_THROWS_WITH(simd::parse_isa("avx9"), Catch::Contains("unknown instruction set 'avx9'"));
}

TEST_CASE("vector kernels (axpy, fma, dot, all_finite) match plain loops at every instruction set", "[simd][vec]") {
    const simd::Isa before = simd::active();
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<double> u(-1, 1);
    for (simd::Isa isa : tg::testing::tested_isas()) {
        simd::force(isa);
        for (std::int64_t n : {0, 1, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 31, 32, 33, 100, 1031}) {
            std::vector<double> a(n), b(n), y(n);
            for (std::int64_t i = 0; i < n; ++i) { a[i] = u(rng); b[i] = u(rng); y[i] = u(rng); }
            std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()), yf(y.begin(), y.end());
            INFO(simd::isa_name(isa) << " n=" << n);
            // axpy and fma: one fused or unfused multiply-add per element, so within one rounding
            std::vector<double> want(n), got = y;
            vec::axpy(n, 0.75, a.data(), got.data());
            for (std::int64_t i = 0; i < n; ++i) CHECK(std::fabs(got[i] - (y[i] + 0.75 * a[i])) <= 4e-16);
            std::vector<float> gotf = yf;
            vec::fma(n, af.data(), bf.data(), gotf.data());
            for (std::int64_t i = 0; i < n; ++i)
                CHECK(std::fabs(gotf[i] - (double(yf[i]) + double(af[i]) * double(bf[i]))) <= 2.4e-7);
            double mag = 0, exact = 0;
            for (std::int64_t i = 0; i < n; ++i) { exact += double(af[i]) * double(bf[i]); mag += std::fabs(double(af[i]) * double(bf[i])); }
            CHECK(std::fabs(vec::dot(n, af.data(), bf.data()) - exact) <= (n + 2) * 6e-8 * mag + 1e-30);
            CHECK(std::fabs(vec::dot(n, a.data(), b.data()) - exact) <= (n + 2) * 1.2e-16 * mag + 1e-7 * mag);
            // all_finite: true on finite values (huge ones too), false with one infinity or NaN
            // planted at any position (whole vectors, the four-vector loop and the tail alike)
            std::vector<float> big = af;
            if (n > 0) big[n / 3] = std::numeric_limits<float>::max();
            CHECK(vec::all_finite(big.data(), n));
            CHECK(vec::all_finite(a.data(), n));
            for (std::int64_t i = 0; i < n; ++i)
                for (double bad : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::quiet_NaN()}) {
                    std::vector<float> pf = big;
                    std::vector<double> pd = a;
                    pf[i] = static_cast<float>(bad);
                    pd[i] = bad;
                    INFO("planted " << bad << " at " << i);
                    CHECK_FALSE(vec::all_finite(pf.data(), n));
                    CHECK_FALSE(vec::all_finite(pd.data(), n));
                }
            // add_runs: two runs over the same destination, the second overlapping the first's tail
            std::vector<float> acc(yf), want_acc(yf);
            const std::int64_t h = n / 2;
            const vec::Run runs[2] = {{0, 0, n}, {h, n - h, h}};
            vec::add_runs(runs, 2, af.data(), acc.data());
            for (std::int64_t i = 0; i < n; ++i) want_acc[i] += af[i];
            for (std::int64_t i = 0; i < h; ++i) want_acc[n - h + i] += af[h + i];
            CHECK(acc == want_acc);
            std::vector<double> accd(y), want_accd(y);
            vec::add_runs(runs, 2, a.data(), accd.data());
            for (std::int64_t i = 0; i < n; ++i) want_accd[i] += a[i];
            for (std::int64_t i = 0; i < h; ++i) want_accd[n - h + i] += a[h + i];
            CHECK(accd == want_accd);
            std::vector<float> inter(2 * n, -1.f);
            vec::interleave2(n, af.data(), bf.data(), inter.data());
            for (std::int64_t i = 0; i < n; ++i) {
                CHECK(inter[2 * i] == af[i]);
                CHECK(inter[2 * i + 1] == bf[i]);
            }
            // interleave: s phase rows of n (distinct values: from the phase and the index) into
            // one row of s·n, one element past it kept (its sentinel); f32 and f64
            for (std::int64_t s = 1; s <= 9; ++s) {
                std::vector<std::vector<float>> ph(static_cast<std::size_t>(s));
                std::vector<std::vector<double>> phd(static_cast<std::size_t>(s));
                std::vector<const float*> pf;
                std::vector<const double*> pd;
                for (std::int64_t p = 0; p < s; ++p) {
                    for (std::int64_t q = 0; q < n; ++q) ph[p].push_back(float(1000 * p + q) + 0.5f);
                    phd[p].assign(ph[p].begin(), ph[p].end());
                    pf.push_back(ph[p].data());
                    pd.push_back(phd[p].data());
                }
                std::vector<float> row(static_cast<std::size_t>(s * n + 1), -1.f);
                std::vector<double> rowd(static_cast<std::size_t>(s * n + 1), -1.0);
                vec::interleave(n, s, pf.data(), row.data());
                vec::interleave(n, s, pd.data(), rowd.data());
                for (std::int64_t q = 0; q < n; ++q)
                    for (std::int64_t p = 0; p < s; ++p) {
                        CHECK(row[s * q + p] == ph[p][q]);
                        CHECK(rowd[s * q + p] == phd[p][q]);
                    }
                CHECK(row.back() == -1.f);
                CHECK(rowd.back() == -1.0);
                // with add: the same values added into the row once more
                vec::interleave(n, s, pf.data(), row.data(), true);
                vec::interleave(n, s, pd.data(), rowd.data(), true);
                for (std::int64_t q = 0; q < n; ++q)
                    for (std::int64_t p = 0; p < s; ++p) {
                        CHECK(row[s * q + p] == 2 * ph[p][q]);
                        CHECK(rowd[s * q + p] == 2 * phd[p][q]);
                    }
                CHECK(row.back() == -1.f);
                CHECK(rowd.back() == -1.0);
            }
        }
    }
    simd::force(before);
}

namespace {

// copy_runs on one run replayed `count` times, against its definition. The source holds
// exactly the elements the runs read (so that ASan sees any read past them), and the
// destination's elements outside the runs must keep their sentinel.
template <class T>
void check_copy_runs(std::int64_t len, std::int64_t lo, std::int64_t hi, std::int64_t step, std::int64_t count) {
    const std::int64_t ss = hi > lo ? (hi - lo - 1) * step + 1 + 3 : 5, ds = len + 2;
    const std::int64_t n_src = hi > lo ? (count - 1) * ss + (hi - lo - 1) * step + 1 : 1;
    // (at least one element: with len 0 nothing is read, but an empty vector's data() is null,
    // and the kernels' per-channel offsets from it are undefined: clang's UBSan)
    std::vector<T> src(static_cast<std::size_t>(std::max<std::int64_t>(n_src, 1)));
    for (std::int64_t i = 0; i < n_src; ++i) src[i] = T(i + 1);
    std::vector<T> dst(static_cast<std::size_t>(count * ds + 1), T(-7)), want = dst;
    const vec::LaneRun run{0, 1, len, lo, hi};
    for (std::int64_t c = 0; c < count; ++c)
        for (std::int64_t e = 0; e < len; ++e) want[1 + c * ds + e] = e >= lo && e < hi ? src[c * ss + (e - lo) * step] : T(0);
    vec::copy_runs(&run, 1, src.data(), step, dst.data(), count, ss, ds);
    CHECK(dst == want);
}

}  // namespace

namespace {

// The small-channel kernels' grid copies at one instruction set against their definition:
// split_rows (`rows` tensor rows of `count` channels, listed last to first, each split by
// `step` into phase rows `ps` apart) and merge_rows (back), each on a source that holds
// exactly the elements read (AddressSanitizer sees any read past them) and a destination
// whose elements outside the rows written keep their sentinel.
template <class T>
void check_phase_rows(const simd_small::Kernels<T>& k, std::int64_t len, std::int64_t step, std::int64_t rows,
                      std::int64_t count) {
    const std::int64_t per = (len + step - 1) / step, ps = per + 3, ldd = step * ps + 1, grid_c = rows * ldd + 2;
    const std::int64_t lds = len + 2, tensor_c = rows * lds + 1;
    std::vector<std::int64_t> list;
    for (std::int64_t r = rows - 1; r >= 0; --r) list.insert(list.end(), {r * lds, 1 + r * ldd});
    const std::int64_t n_src = len > 0 ? (count - 1) * tensor_c + (rows - 1) * lds + len : 0;
    // (at least one element: with len 0 nothing is read, but an empty vector's data() is null,
    // and the kernels' per-channel offsets from it are undefined: clang's UBSan)
    std::vector<T> src(static_cast<std::size_t>(std::max<std::int64_t>(n_src, 1)));
    for (std::int64_t i = 0; i < n_src; ++i) src[i] = T(i + 1);
    std::vector<T> grid(static_cast<std::size_t>(count * grid_c + 1), T(-7)), want = grid;
    for (std::int64_t c = 0; c < count; ++c)
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t q = 0; q < per; ++q)
                for (std::int64_t p = 0; p < step && q * step + p < len; ++p)
                    want[1 + c * grid_c + r * ldd + p * ps + q] = src[c * tensor_c + r * lds + q * step + p];
    k.split_rows({src.data(), tensor_c, grid.data(), grid_c, list.data(), rows, len, step, ps, count});
    CHECK(grid == want);

    // merge_rows from the phase rows just checked (read through a copy holding exactly them).
    const std::int64_t n_phase = len > 0 ? 1 + (count - 1) * grid_c + (rows - 1) * ldd + (step - 1) * ps + per : 0;
    std::vector<T> phases(want.begin(), want.begin() + std::max<std::int64_t>(n_phase, 1));
    std::vector<T> back(static_cast<std::size_t>(n_src + 1), T(-7)), back_want = back;
    for (std::int64_t c = 0; c < count; ++c)
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t e = 0; e < len; ++e) back_want[c * tensor_c + r * lds + e] = src[c * tensor_c + r * lds + e];
    k.merge_rows({phases.data(), grid_c, back.data(), tensor_c, list.data(), rows, len, step, ps, count});
    CHECK(back == back_want);
}

}  // namespace

namespace {

// The small-channel correlation at one instruction set against its definition, summed in
// double: every position of every image's span [lo, hi), and nothing written before the
// first image's lo. Spans that the kernel runs image by image and spans it runs as one.
void check_correlate(const simd_small::Kernels<float>& k, std::int64_t images, std::int64_t image_len, std::int64_t lo,
                     std::int64_t hi, std::int64_t nout, std::int64_t nin) {
    const std::vector<std::int64_t> off = {0, 1, 3, 9};
    const std::int64_t ntaps = static_cast<std::int64_t>(off.size());
    const std::int64_t len = images * image_len, ldi = len + 9 + simd_small::kMargin, ldo = len + simd_small::kMargin;
    std::mt19937 rng(static_cast<unsigned>(images * 131 + lo * 17 + hi + nout * 7 + nin));
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> in(static_cast<std::size_t>(nin * ldi)), w(static_cast<std::size_t>(nin * ntaps * nout));
    for (float& v : in) v = u(rng);
    for (float& v : w) v = u(rng);
    const float sentinel = -1234.5f;
    std::vector<float> out(static_cast<std::size_t>(nout * ldo), sentinel);
    k.correlate({images, image_len, lo, hi, nout, nin, ntaps, off.data(), w.data(), in.data(), ldi, out.data(), ldo});
    std::int64_t bad = 0, touched = 0;
    for (std::int64_t o = 0; o < nout; ++o) {
        for (std::int64_t t = 0; t < lo; ++t) touched += out[o * ldo + t] != sentinel;
        for (std::int64_t n = 0; n < images; ++n)
            for (std::int64_t t = n * image_len + lo; t < n * image_len + hi; ++t) {
                double want = 0, scale = 0;
                for (std::int64_t c = 0; c < nin; ++c)
                    for (std::int64_t kk = 0; kk < ntaps; ++kk) {
                        const double p = double(w[(c * ntaps + kk) * nout + o]) * in[c * ldi + off[kk] + t];
                        want += p;
                        scale += std::fabs(p);
                    }
                bad += !(std::fabs(out[o * ldo + t] - want) <= 1e-6 * scale * double(nin * ntaps));
            }
    }
    INFO("images " << images << " image_len " << image_len << " span [" << lo << ", " << hi << ") nout " << nout << " nin "
                   << nin << ": " << bad << " wrong, " << touched << " written before the first span");
    CHECK(bad == 0);
    CHECK(touched == 0);
}

}  // namespace

TEST_CASE("the small-channel correlation covers every image's span at every instruction set", "[simd][small]") {
    for (simd::Isa isa : tg::testing::tested_isas()) {
        static constexpr simd::Dispatch<simd_small::Kernels<float>> tables{simd_small::f32_scalar, simd_small::f32_avx2,
                                                                          simd_small::f32_avx512};
        const simd_small::Kernels<float>& k = tables.on(isa);
        INFO(simd::isa_name(isa));
        // (images, image_len, lo, hi): a 7 × 7 grid of pitch 8 (run image by image at AVX2),
        // spans that start past 0 (the transposed kernel's phase planes), long images with a
        // short gap (run as one span), one image, spans shorter than a vector.
        const std::int64_t spans[][4] = {{5, 64, 0, 55},  {4, 64, 9, 64},   {3, 225, 15, 210}, {4, 900, 0, 838},
                                          {1, 50, 0, 50},  {6, 40, 3, 7},    {3, 33, 0, 33},    {2, 300, 20, 21}};
        for (const auto& sp : spans)
            for (std::int64_t nout : {1, 2, 3, 6, 8, 13, 32})
                for (std::int64_t nin : {1, 3}) check_correlate(k, sp[0], sp[1], sp[2], sp[3], nout, nin);
    }
}

TEST_CASE("the small-channel kernels' grid copy matches its definition at every instruction set", "[simd][vec]") {
    for (simd::Isa isa : tg::testing::tested_isas()) {
        static constexpr simd::Dispatch<simd_small::Kernels<float>> tables{simd_small::f32_scalar, simd_small::f32_avx2,
                                                                          simd_small::f32_avx512};
        static constexpr simd::Dispatch<simd_small::Kernels<double>> tables64{simd_small::f64_scalar, simd_small::f64_avx2,
                                                                             simd_small::f64_avx512};
        for (std::int64_t step : {1, 2, 3, 4, 5, 7})
            for (std::int64_t len : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 17, 24, 28, 31, 32, 33, 40, 64, 65, 129})
                for (std::int64_t rows : {1, 3}) {
                    INFO(simd::isa_name(isa) << " step " << step << " len " << len << " rows " << rows);
                    check_phase_rows(tables.on(isa), len, step, rows, 2);
                    check_phase_rows(tables64.on(isa), len, step, rows, 2);
                }
    }
}

TEST_CASE("copy_runs (im2col rows) and transpose match their definitions at every instruction set", "[simd][vec]") {
    const simd::Isa before = simd::active();
    for (simd::Isa isa : tg::testing::tested_isas()) {
        simd::force(isa);
        for (std::int64_t step : {1, 2, 3})
            for (std::int64_t len : {0, 1, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 31, 32, 33, 40, 239, 240, 241, 481, 512})
                for (std::int64_t lo : {std::int64_t{0}, std::int64_t{1}, len / 2, len})
                    for (std::int64_t hi : {lo, std::min(len, lo + 1), std::max(lo, len - 1), len})
                        for (std::int64_t count : {1, 3}) {
                            INFO(simd::isa_name(isa) << " step " << step << " len " << len << " lo " << lo << " hi " << hi
                                                     << " count " << count);
                            if (lo > len || hi > len || hi < lo) continue;
                            check_copy_runs<float>(len, lo, hi, step, count);
                            check_copy_runs<double>(len, lo, hi, step, count);
                        }
        for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{32, 256}, {16, 16}, {8, 8}, {33, 17}, {5, 40}, {1, 1},
                                  {8, 64}, {3, 50}, {24, 37}, {15, 16}, {2, 33}, {18, 40}, {4, 19}, {1, 7}, {3, 64}})
            // Both block orders: ldd + 300 is past lds for every pair (destination rows apart
            // by more than source rows: the blocks walk the destination's rows); ldd = rows,
            // a dense destination (up to 4 rows: interleaved).
            for (std::int64_t extra : {0, 2, 300}) {
                INFO(simd::isa_name(isa) << " transpose " << rows << " x " << cols << " ldd " << rows + extra);
                const std::int64_t lds = cols + 3, ldd = rows + extra;
                std::vector<float> src(static_cast<std::size_t>(rows * lds)), dst(static_cast<std::size_t>(cols * ldd), -1.f), want = dst;
                for (std::size_t i = 0; i < src.size(); ++i) src[i] = float(i);
                for (std::int64_t r = 0; r < rows; ++r)
                    for (std::int64_t c = 0; c < cols; ++c) want[c * ldd + r] = src[r * lds + c];
                vec::transpose(src.data(), lds, rows, cols, dst.data(), ldd);
                CHECK(dst == want);
                std::vector<double> srcd(src.begin(), src.end()), dstd(dst.size(), -1.0), wantd(want.begin(), want.end());
                vec::transpose(srcd.data(), lds, rows, cols, dstd.data(), ldd);
                CHECK(dstd == wantd);
            }
    }
    simd::force(before);
}
