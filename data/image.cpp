#include "tapegrad/data/image.hpp"

#include "tapegrad/core/atomic_file.hpp"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <unistd.h>

namespace tg {

namespace {

// Writes 8-bit grey (channels 1) or RGB (channels 3) pixels, row-major, to a temporary name
// and renames it into place.
void write_png(const std::string& path, int width, int height, int channels, const std::vector<unsigned char>& px) {
    const std::string tmp = create_temp_beside(path, "path");
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) {
        std::remove(tmp.c_str());
        fail("path", "cannot write '", path, "'");
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png ? png_create_info_struct(png) : nullptr;
    if (!png || !info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        std::fclose(f);
        std::remove(tmp.c_str());
        fail("path", "libpng failed while writing '", path, "'");
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8,
                 channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (std::int64_t y = 0; y < height; ++y) png_write_row(png, px.data() + static_cast<std::size_t>(y) * width * channels);
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    if (std::fclose(f) != 0) {
        std::remove(tmp.c_str());
        fail("path", "cannot finish writing '", path, "'");
    }
    move_into_place(tmp, path, "path");
}

}  // namespace

void write_png_grid(const std::string& path, const Tensor& images, int cols, int zoom) {
    Shape s = images.shape();
    if (s.size() == 4 && s[1] == 1) s = {s[0], s[2], s[3]};
    if (s.size() != 3) fail("images", "write_png_grid: images must be [N, H, W] or [N, 1, H, W], got ", shape_str(images.shape()));
    if (cols < 1 || zoom < 1) fail("cols", "write_png_grid: cols and zoom must be >= 1");
    const std::int64_t N = s[0], H = s[1], W = s[2];
    const std::int64_t rows = (N + cols - 1) / cols, border = 2;
    const std::int64_t width = cols * (W * zoom + border) + border, height = rows * (H * zoom + border) + border;
    std::vector<unsigned char> px(static_cast<std::size_t>(width * height), 40);
    const std::vector<double> v = images.values();
    for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t oy = border + (n / cols) * (H * zoom + border), ox = border + (n % cols) * (W * zoom + border);
        for (std::int64_t y = 0; y < H * zoom; ++y)
            for (std::int64_t x = 0; x < W * zoom; ++x) {
                const double val = std::clamp(v[static_cast<std::size_t>((n * H + y / zoom) * W + x / zoom)], 0.0, 1.0);
                px[static_cast<std::size_t>((oy + y) * width + ox + x)] = static_cast<unsigned char>(val * 255.0 + 0.5);
            }
    }
    write_png(path, static_cast<int>(width), static_cast<int>(height), 1, px);
}

void write_png_plot(const std::string& path, const std::vector<PlotSeries>& series, int width, int height) {
    if (width < 64 || height < 64 || width > 8192 || height > 8192)
        fail("size", "write_png_plot: the size is ", width, "x", height, ", each must be from 64 to 8192");
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (const PlotSeries& s : series) {
        if (s.x.size() != s.y.size()) fail("series", "write_png_plot: a series has ", s.x.size(), " x and ", s.y.size(), " y");
        for (std::size_t i = 0; i < s.x.size(); ++i)
            if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) {
                x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
                y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
            }
    }
    if (!(x0 <= x1)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;  // nothing to draw: empty axes
    if (x1 - x0 < 1e-12) x0 -= 0.5, x1 += 0.5;
    if (y1 - y0 < 1e-12) y0 -= 0.5, y1 += 0.5;
    const double pad = 0.05 * (y1 - y0);
    y0 -= pad, y1 += pad;
    const int left = 40, right = width - 16, top = 16, bottom = height - 32;  // the plot area's corners
    std::vector<unsigned char> px(static_cast<std::size_t>(width) * height * 3, 255);
    auto put = [&](int x, int y, const std::array<unsigned char, 3>& c) {
        if (x < 0 || y < 0 || x >= width || y >= height) return;
        std::copy(c.begin(), c.end(), px.begin() + (static_cast<std::ptrdiff_t>(y) * width + x) * 3);
    };
    const std::array<unsigned char, 3> grid{225, 225, 225}, axis{0, 0, 0};
    for (int k = 0; k <= 10; ++k) {
        const int gx = left + (right - left) * k / 10, gy = bottom - (bottom - top) * k / 10;
        for (int y = top; y <= bottom; ++y) put(gx, y, grid);
        for (int x = left; x <= right; ++x) put(x, gy, grid);
        for (int t = 1; t <= 5; ++t) put(gx, bottom + t, axis), put(left - t, gy, axis);  // ticks
    }
    for (int y = top; y <= bottom; ++y) put(left, y, axis);
    for (int x = left; x <= right; ++x) put(x, bottom, axis);
    auto to_px = [&](double x, double y) {
        return std::pair<int, int>{static_cast<int>(std::lround(left + (x - x0) / (x1 - x0) * (right - left))),
                                   static_cast<int>(std::lround(bottom - (y - y0) / (y1 - y0) * (bottom - top)))};
    };
    auto dot = [&](int x, int y, int r, const std::array<unsigned char, 3>& c) {
        for (int dy = -r; dy <= r; ++dy)
            for (int dx = -r; dx <= r; ++dx) put(x + dx, y + dy, c);
    };
    for (const PlotSeries& s : series) {
        bool have = false;
        std::pair<int, int> prev{0, 0};
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
            const std::pair<int, int> p = to_px(s.x[i], s.y[i]);
            if (have) {  // a line from prev to p, 2 pixels wide
                const int n = std::max({std::abs(p.first - prev.first), std::abs(p.second - prev.second), 1});
                for (int t = 0; t <= n; ++t) {
                    const int x = prev.first + static_cast<int>(std::lround(double(p.first - prev.first) * t / n));
                    const int y = prev.second + static_cast<int>(std::lround(double(p.second - prev.second) * t / n));
                    put(x, y, s.rgb), put(x + 1, y, s.rgb), put(x, y + 1, s.rgb), put(x + 1, y + 1, s.rgb);
                }
            }
            if (s.markers) dot(p.first, p.second, 3, s.rgb);
            prev = p;
            have = true;
        }
    }
    write_png(path, width, height, 3, px);
}

}  // namespace tg
