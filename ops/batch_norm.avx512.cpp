// Batch normalisation's loops compiled for AVX-512 (F, CD, DQ, BW, VL); see tapegrad/ops/batch_norm_kernel.hpp.
#include "tapegrad/ops/batch_norm_kernel.hpp"

namespace {
struct Set {};  // this translation unit's tag: its instantiations are its own
}  // namespace

TG_INSTANTIATE_BN(Set, avx512)
