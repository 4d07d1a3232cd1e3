// A strict NumPy .npy reader and an atomic writer (format versions 1.0, 2.0 and 3.0).
// xtensor's reader wants the header keys in one order, cannot read '<f2' and trusts the
// file; case files come from anywhere, so every field is validated before anything is
// allocated.
#pragma once
#include <cstdint>
#include <string>

#include "tapegrad/core/tensor.hpp"

namespace tg {

struct NpyOptions {
    // Largest payload accepted, in bytes; a bigger tensor is refused before allocation.
    std::int64_t max_bytes = std::int64_t{4} << 30;
};

// Reads '<f8' '<f4' '<f2' '<i4' '<i8' (and their big-endian forms, byte-swapped), C or
// Fortran order (Fortran is reordered to C). Errors name `key` (e.g. the input's role).
Tensor read_npy(const std::string& path, const std::string& key = "npy", const NpyOptions& opt = {});

// What an .npy header says, validated exactly as read_npy validates it (including that the
// file holds exactly the payload the shape needs), without reading or allocating the data.
struct NpyInfo {
    Shape shape;   // the logical (C-order) shape, also for Fortran-order files
    DType dtype;
};
NpyInfo read_npy_header(const std::string& path, const std::string& key = "npy", const NpyOptions& opt = {});

// Writes a tensor as a version-1.0 .npy in C order. bf16 is written as '<f4' (NumPy has no
// bf16). The file appears complete or not at all: written to a temporary name, then renamed.
void write_npy(const std::string& path, const Tensor& t, const std::string& key = "output");

}  // namespace tg
