// Pictures as PNG files, drawn with cairo (text in the DejaVu Sans font through fontconfig):
// a grid of grey images with a title and row labels, and a line plot with tick values,
// axis names, a legend and a title. Both are written to a temporary name beside the target
// and renamed into place (tapegrad/core/atomic_file.hpp).
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tg {

// How write_png_grid lays the images out: `cols` per row with a 2-pixel border, each pixel
// scaled up `zoom` times; `title` above the grid and `row_labels` (one per row of images,
// or none) to its left. Empty strings draw nothing.
struct GridOptions {
    int cols = 8;
    int zoom = 2;
    std::string title;
    std::vector<std::string> row_labels;
};

// `images` is [N, H, W] (or [N, 1, H, W]) with values in [0, 1] (clamped; NaN draws black).
void write_png_grid(const std::string& path, const Tensor& images, const GridOptions& options);

// One line of a plot: points (x[i], y[i]) joined in order, in colour rgb, named `name` in
// the legend (an empty name leaves the series out of it); each point also gets a small
// square marker when `markers` is set (a series of one point shows only that).
struct PlotSeries {
    std::string name;
    std::vector<double> x, y;
    std::array<unsigned char, 3> rgb{0, 0, 0};
    bool markers = false;
};

// What frames a plot. `log_y` unset: a log-scale y axis when every finite y is positive and
// the largest is more than ten times the smallest (the range spans more than a decade),
// a linear one otherwise.
struct PlotOptions {
    std::string title, x_label, y_label;
    std::optional<bool> log_y;
    int width = 800, height = 500;
};

// The ranges and ticks write_png_plot draws: per axis the data range shown (`lo` to `hi`),
// whether it is a log scale, and the tick values.
struct PlotAxis {
    double lo = 0, hi = 1;
    bool log = false;
    std::vector<double> ticks;
};
struct PlotFrame {
    PlotAxis x, y;
};
PlotFrame plot_frame(const std::vector<PlotSeries>& series, const PlotOptions& options = {});

// A line plot as an RGB PNG: a white canvas, the title on top, both axes with tick marks,
// tick values at round numbers (1, 2 or 5 times a power of ten; powers of ten on a log
// axis) and light grid lines, the axis names, each series as a 2-pixel polyline clipped to
// the plot area, and a legend in its upper right corner. The axes span the finite points of
// every series (y with 5 % room). Non-finite points are skipped; with no point at all the
// axes are drawn from 0 to 1. The size must be from 160x120 to 8192x8192.
void write_png_plot(const std::string& path, const std::vector<PlotSeries>& series, const PlotOptions& options = {});

}  // namespace tg
