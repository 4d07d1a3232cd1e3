#include "tapegrad/data/image.hpp"

#include <png.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include <unistd.h>

namespace tg {

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
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail("path", "cannot write '", path, "'");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png ? png_create_info_struct(png) : nullptr;
    if (!png || !info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        std::fclose(f);
        std::remove(tmp.c_str());
        fail("path", "libpng failed while writing '", path, "'");
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (std::int64_t y = 0; y < height; ++y) png_write_row(png, &px[static_cast<std::size_t>(y * width)]);
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        fail("path", "cannot finish writing '", path, "'");
    }
}

}  // namespace tg
