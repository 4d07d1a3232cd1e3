// A strict NumPy .npy reader and an atomic writer (format versions 1.0, 2.0 and 3.0).
// xtensor's reader wants the header keys in one order, cannot read '<f2' and trusts the
// file; case files come from anywhere, so every field is validated before anything is
// allocated.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tg {

struct NpyOptions {
    // Largest payload accepted, in bytes; a bigger tensor is refused before allocation.
    std::int64_t max_bytes = std::int64_t{4} << 30;
};

// Reads '<f8' '<f4' '<f2' '<i4' '<i8' (and their big-endian forms, byte-swapped), C or
// Fortran order (Fortran is reordered to C). Errors name `key` (e.g. the input's role).
Tensor read_npy(const std::string& path, const std::string& key = "npy", const NpyOptions& opt = {});

// read_npy on bytes in memory; `name` stands for the path in messages.
Tensor decode_npy(const std::string& bytes, const std::string& name, const std::string& key = "npy",
                  const NpyOptions& opt = {});
// The bytes write_npy writes (version 1.0, C order, bf16 as '<f4').
std::string encode_npy(const Tensor& t, const std::string& key = "output");

// What an .npy header says, validated exactly as read_npy validates it (including that the
// file holds exactly the payload the shape needs), without reading or allocating the data.
struct NpyInfo {
    Shape shape;   // the logical (C-order) shape, also for Fortran-order files
    DType dtype;
};
NpyInfo read_npy_header(const std::string& path, const std::string& key = "npy", const NpyOptions& opt = {});

// Writes a tensor as a version-1.0 .npy in C order. bf16 is written as '<f4' (NumPy has no
// bf16). The file appears complete or not at all: written to a temporary name, then renamed.
// A target that exists must be a regular file (never a symlink, device or directory).
void write_npy(const std::string& path, const Tensor& t, const std::string& key = "output");

// Several .npy files written all or nothing: stage() writes each one to a temporary file
// beside its target, commit() renames them all into place. Until commit() every file that
// existed is untouched; a set destroyed without commit() removes its temporaries.
class NpyWriteSet {
public:
    NpyWriteSet() = default;
    NpyWriteSet(const NpyWriteSet&) = delete;
    NpyWriteSet& operator=(const NpyWriteSet&) = delete;
    ~NpyWriteSet();
    void stage(const std::string& path, const Tensor& t, const std::string& key = "output");
    void commit();

private:
    std::vector<std::pair<std::string, std::string>> staged_;  // (target, temporary)
};

// A path the library may open: not empty, no NUL byte, at most 4096 bytes. Errors name `key`.
void check_path(const std::string& path, const std::string& key);
// check_path, and a target that exists must be a regular file.
void check_output_target(const std::string& path, const std::string& key);

}  // namespace tg
