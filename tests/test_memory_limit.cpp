// The one memory limit (tapegrad/core/workspace.hpp): tensors, kernel workspaces and gradient checks
// all refuse, before allocating, what would pass it, with an error that gives the sizes; and
// the cache of freed tensor storage.
#include <catch2/catch.hpp>

#include <algorithm>
#include <malloc.h>
#include <sys/resource.h>

#include "tapegrad/autograd/conv.hpp"
#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/core/workspace.hpp"

using namespace tg;

namespace {

// Sets the limit for one test and puts the old one back.
struct LimitGuard {
    explicit LimitGuard(std::int64_t bytes) : old(memory_limit()) { set_memory_limit(bytes); }
    ~LimitGuard() { set_memory_limit(old); }
    std::int64_t old;
};

}  // namespace

TEST_CASE("memory limit: byte counts parse with binary suffixes", "[memory]") {
    CHECK(parse_byte_count("1000") == 1000);
    CHECK(parse_byte_count("64K") == 65536);
    CHECK(parse_byte_count("1.5G") == std::int64_t{3} << 29);
    CHECK(parse_byte_count("512MiB") == std::int64_t{512} << 20);
    CHECK(parse_byte_count("lots") == -1);
    CHECK(parse_byte_count("-5") == -1);
    CHECK(parse_byte_count("5X") == -1);
    CHECK_THROWS_WITH(set_memory_limit(0), Catch::Contains("memory limit 0"));
}

TEST_CASE("memory limit: a tensor over the limit is refused before allocation, and memory comes back", "[memory]") {
    const std::int64_t before = memory_in_use();
    {
        LimitGuard guard(std::int64_t{64} << 20);
        CHECK_THROWS_WITH(Tensor::empty({1024, 1024, 32}, DType::f32),  // 128 MiB
                          Catch::Contains("over the memory limit of 67108864") && Catch::Contains("134217728"));
        const Tensor ok = Tensor::empty({1024, 1024, 8}, DType::f32);  // 32 MiB fits
        CHECK(memory_in_use() >= before + (std::int64_t{32} << 20));
        CHECK_THROWS_AS(Tensor::empty({1024, 1024, 10}, DType::f32), Error);  // 40 more do not, with 32 held
    }
    CHECK(memory_in_use() == before);
}

TEST_CASE("memory limit: gradcheck of a huge transposed convolution is refused, not attempted", "[memory]") {
    LimitGuard guard(std::int64_t{256} << 20);
    // stride 2^15 on both axes of a 4x4 input: the result has ~2.4e11 elements
    const ConvGeometry g = ConvGeometry::transposed({.N = 1, .C_in = 1, .C_out = 1, .in_size = {4, 4}, .kernel = {2, 2},
                                                     .stride = {32768, 32768}});
    const ag::Function f = [&g](const std::vector<ag::Variable>& v) { return ag::conv_transpose(v[0], v[1], g); };
    const std::vector<Tensor> in{Tensor::full(g.out_shape(), 1, DType::f64), Tensor::full(g.weight_shape(), 1, DType::f64)};
    CHECK_THROWS_WITH(ag::gradcheck(f, in), Catch::Contains("memory limit"));
}

// Freed tensor storage from 64 KiB up is kept for the next tensor of about its size
// (core/workspace.cpp), so an op called in a loop does not fault in fresh pages for every
// result. Below that size malloc's own lists are left to do it; between 64 KiB and 1 MiB
// they did not: glibc maps such blocks afresh, or trims them off the heap's top, depending
// on what the process did before (a 3-D forward layer of 221 KiB results ran 0.22 or 0.48
// ms by whether stdout was a file or a pipe, 12 015 page faults against 748). Here malloc
// is told to map every block from 64 KiB (as it may on its own), and 20 results of 256 KiB
// must not fault their pages in again. Not under AddressSanitizer: nothing is cached there.
TEST_CASE("memory: freed tensor storage of 64 KiB to 1 MiB is reused, not faulted in again", "[memory]") {
#if defined(__SANITIZE_ADDRESS__)
    SUCCEED("the sanitizer build caches nothing");
#else
    mallopt(M_MMAP_THRESHOLD, 64 << 10);
    const auto minor_faults = [] {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        return u.ru_minflt;
    };
    // Tensors of 256 KiB written in place (no temporaries of malloc's own in the loop).
    const auto result = [](float v) {
        Tensor t = Tensor::empty({256, 256}, DType::f32);
        std::fill_n(t.data<float>(), t.numel(), v);  // every page written
        return t;
    };
    { const Tensor warm = result(1); }  // into the cache when freed
    const long before = minor_faults();
    double sum = 0;
    for (int i = 0; i < 20; ++i) sum += result(static_cast<float>(i)).data<float>()[256 * 256 - 1];
    const long faults = minor_faults() - before;
    mallopt(M_MMAP_THRESHOLD, 128 << 10);  // glibc's initial threshold
    CHECK(sum == 190);
    INFO("minor page faults over 20 results of 64 pages each: " << faults);
    CHECK(faults < 64);
#endif
}
