// Writing a grid of grey images as a PNG (through libpng), for looking at what a model does.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tg {

// `images` is [N, H, W] (or [N, 1, H, W]) with values in [0, 1] (clamped). They are laid
// out `cols` per row with a 2-pixel border, each pixel scaled up `zoom` times. The file is
// written to a temporary name and renamed into place.
void write_png_grid(const std::string& path, const Tensor& images, int cols, int zoom = 2);

// One line of a plot: points (x[i], y[i]) joined in order, in colour rgb; each point also
// gets a small square marker when `markers` is set (a series of one point shows only that).
struct PlotSeries {
    std::vector<double> x, y;
    std::array<unsigned char, 3> rgb{0, 0, 0};
    bool markers = false;
};

// A line plot as an RGB PNG of width × height pixels: a white canvas, the two axes with
// tick marks and light grid lines at ten equal steps, and each series drawn as a 2-pixel
// polyline. The axes span the smallest and largest x and y over all series (y with 5 %
// room above and below); there is no text. Non-finite points are skipped. Written to a
// temporary name and renamed into place, as write_png_grid.
void write_png_plot(const std::string& path, const std::vector<PlotSeries>& series, int width = 640, int height = 400);

}  // namespace tg
