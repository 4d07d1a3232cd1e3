// libFuzzer target: the IDX reader (tapegrad/data/idx.hpp) on arbitrary bytes, plain or gzip. Every
// input must load or raise tg::Error.
#include <cstdlib>

#include "fuzz_file.hpp"
#include "tapegrad/data/idx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = tg::fuzz::put_file("input.idx", data, size);
    try {
        const tg::Tensor t = tg::read_idx(path, {.max_bytes = std::int64_t{1} << 24});
        if (t.numel() != tg::shape_numel(t.shape())) std::abort();
        (void)t.values();
    } catch (const tg::Error&) {
    }
    return 0;
}
