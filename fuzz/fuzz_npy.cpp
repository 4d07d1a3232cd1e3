// libFuzzer target: the .npy reader (tapegrad/core/npy.hpp) on arbitrary bytes. Every input must
// either load or raise tg::Error; anything else (a crash, a sanitizer report, another
// exception type, a tensor whose size disagrees with its shape) is a finding.
#include <cstdlib>

#include "fuzz_file.hpp"
#include "tapegrad/core/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = tg::fuzz::put_file("input.npy", data, size);
    try {
        const tg::Tensor t = tg::read_npy(path, "npy", {.max_bytes = std::int64_t{1} << 24});
        if (t.numel() != tg::shape_numel(t.shape())) std::abort();
        (void)t.values();  // touches every element
    } catch (const tg::Error&) {
    }
    return 0;
}
