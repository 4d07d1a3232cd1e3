// The one memory limit (tapegrad/core/workspace.hpp): tensors, kernel workspaces and gradient checks
// all refuse, before allocating, what would pass it, with an error that gives the sizes.
#include <catch2/catch.hpp>

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
