// Reader for the IDX files of MNIST and Fashion-MNIST (optionally gzip-compressed), as
// Debian's dataset-fashion-mnist ships them under /usr/share/datasets/fashion-mnist.
#pragma once
#include <cstdint>
#include <string>

#include "tapegrad/core/tensor.hpp"

namespace tg {

struct IdxOptions {
    int rank = 0;                // the rank the file must have (0: any of 1 to 4)
    bool scale_to_unit = true;   // f32 data scaled from [0, 255] to [0, 1]
    // The most data bytes the reader accepts: the header is checked against it before
    // anything is allocated, so a small gzip that expands to gigabytes is refused at once.
    std::int64_t max_bytes = std::int64_t{1} << 30;
};

// An IDX file of unsigned bytes as a tensor: rank 1 (labels) as i64, ranks 2 to 4 (images
// [N, rows, cols]) as f32. The header is read first and checked (magic, rank, dims, the
// size bound); then exactly the data it announces is read, and a file that is shorter or
// longer is refused. Every error names the file.
Tensor read_idx(const std::string& path, const IdxOptions& opt = {});

// The two shapes a dataset has: images [N, rows, cols] (f32 in [0, 1]) and labels [N] (i64).
Tensor read_idx_images(const std::string& path);
Tensor read_idx_labels(const std::string& path);

}  // namespace tg
