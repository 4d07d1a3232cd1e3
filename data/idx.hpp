// Reader for the IDX files of MNIST and Fashion-MNIST (optionally gzip-compressed), as
// Debian's dataset-fashion-mnist ships them under /usr/share/datasets/fashion-mnist.
#pragma once
#include <string>

#include "tapegrad/core/tensor.hpp"

namespace tg {

// An IDX file of unsigned bytes as a tensor: images [N, rows, cols] as f32 scaled to
// [0, 1] when `scale` is set, labels [N] as i64. Validates the magic, the dims and the size.
Tensor read_idx(const std::string& path, bool scale_to_unit = true);

}  // namespace tg
