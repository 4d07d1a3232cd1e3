// Writing a grid of grey images as a PNG (through libpng), for looking at what a model does.
#pragma once
#include <string>

#include "tapegrad/core/tensor.hpp"

namespace tg {

// `images` is [N, H, W] (or [N, 1, H, W]) with values in [0, 1] (clamped). They are laid
// out `cols` per row with a 2-pixel border, each pixel scaled up `zoom` times. The file is
// written to a temporary name and renamed into place.
void write_png_grid(const std::string& path, const Tensor& images, int cols, int zoom = 2);

}  // namespace tg
