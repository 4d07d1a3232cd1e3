// The one reader of tapegrad's environment variables. Each variable is read when it is
// first needed (never during static initialisation, so a bad value cannot stop a program
// before main) and validated there: a value that does not parse is a tg::Error naming the
// variable and the value; unset or empty means "not given". The variables (docs/settings.md):
//
//   TAPEGRAD_NUM_THREADS       threads, 1..256 (tapegrad/core/blas.hpp)
//   TAPEGRAD_MEMORY_LIMIT      bytes tensors and workspaces may hold, e.g. 8G (tapegrad/core/workspace.hpp)
//   TAPEGRAD_SIMD              scalar | avx2 | avx512: the kernels' instruction set (tapegrad/core/simd.hpp)
//   TAPEGRAD_TRANSPOSED        auto | col2im | phases: the transposed convolution's algorithm
//   TAPEGRAD_CHECKPOINT_FAULT  tests only: kill a checkpoint save at that step (nn/checkpoint.cpp)
//   TAPEGRAD_FUZZ_VERBOSE      fuzz targets only: print what each input did
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace tg::env {

// The raw value, or nullopt when unset or empty.
std::optional<std::string> text(const char* name);
// A whole decimal number from lo to hi ("NAME='two' is not an integer in 1..256").
std::optional<std::int64_t> integer(const char* name, std::int64_t lo, std::int64_t hi);
// One of `choices`, spelled exactly ("NAME='x' must be auto, col2im or phases").
std::optional<std::string> choice(const char* name, std::initializer_list<const char*> choices);
// A byte count as parse_byte_count reads it ("NAME='lots' is not a byte count (e.g. 8G, 512M, 1000000)").
std::optional<std::int64_t> bytes(const char* name);

}  // namespace tg::env
