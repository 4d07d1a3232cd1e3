#include "tapegrad/data/image.hpp"

#include "tapegrad/core/atomic_file.hpp"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>

namespace tg {

namespace {

using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using Context = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

constexpr int kMaxSide = 32767;  // cairo's largest image surface side
constexpr const char* kFont = "DejaVu Sans";

Surface make_surface(int width, int height) {
    Surface s(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height), cairo_surface_destroy);
    if (cairo_surface_status(s.get()) != CAIRO_STATUS_SUCCESS)
        fail("size", "cairo cannot make a ", width, "x", height, " picture: ", cairo_status_to_string(cairo_surface_status(s.get())));
    return s;
}

Context make_context(cairo_surface_t* s) { return Context(cairo_create(s), cairo_destroy); }

void set_font(cairo_t* cr, double size, bool bold = false) {
    cairo_select_font_face(cr, kFont, CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

double text_width(cairo_t* cr, const std::string& s) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, s.c_str(), &e);
    return e.x_advance;
}

// Draws `s` in the current font with its anchor at (x, y): ax 0 / 0.5 / 1 puts the anchor
// at the text's left / centre / right, ay the same from the top of capitals to the baseline.
void draw_text(cairo_t* cr, double x, double y, const std::string& s, double ax, double ay) {
    if (s.empty()) return;
    cairo_font_extents_t f;
    cairo_font_extents(cr, &f);
    const double cap = f.ascent * 0.75;  // about the height of a capital letter
    cairo_move_to(cr, x - ax * text_width(cr, s), y + (1 - ay) * cap);
    cairo_show_text(cr, s.c_str());
}

void set_rgb(cairo_t* cr, const std::array<unsigned char, 3>& c) { cairo_set_source_rgb(cr, c[0] / 255.0, c[1] / 255.0, c[2] / 255.0); }

// Writes the surface as a PNG to a temporary name beside `path`, then renames it into place.
void write_surface(const std::string& path, cairo_surface_t* s) {
    const std::string tmp = create_temp_beside(path, "path");
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) {
        std::remove(tmp.c_str());
        fail("path", "cannot write '", path, "'");
    }
    const cairo_status_t st = cairo_surface_write_to_png_stream(
        s,
        [](void* file, const unsigned char* data, unsigned int n) {
            return std::fwrite(data, 1, n, static_cast<std::FILE*>(file)) == n ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
        },
        f);
    if (std::fclose(f) != 0 || st != CAIRO_STATUS_SUCCESS) {
        std::remove(tmp.c_str());
        fail("path", "cannot finish writing '", path, "'", st != CAIRO_STATUS_SUCCESS ? std::string(": ") + cairo_status_to_string(st) : std::string());
    }
    move_into_place(tmp, path, "path");
}

void check_drawn(cairo_t* cr, const std::string& path) {
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
        fail("path", "cairo failed while drawing '", path, "': ", cairo_status_to_string(cairo_status(cr)));
}

double frac(const PlotAxis& a, double v) {  // 0 at lo, 1 at hi
    return a.log ? (std::log10(v) - std::log10(a.lo)) / (std::log10(a.hi) - std::log10(a.lo)) : (v - a.lo) / (a.hi - a.lo);
}

// About `want` round numbers from lo to hi: the multiples of a step of 1, 2 or 5 times a
// power of ten.
std::vector<double> linear_ticks(double lo, double hi, int want) {
    const double raw = (hi - lo) / want, p = std::pow(10.0, std::floor(std::log10(raw)));
    double step = 10 * p;
    for (double m : {1.0, 2.0, 5.0})
        if (m * p >= raw) {
            step = m * p;
            break;
        }
    std::vector<double> t;
    for (double k = std::ceil(lo / step); k * step <= hi + step * 1e-9; ++k) t.push_back(std::abs(k) < 0.5 ? 0.0 : k * step);
    return t;
}

// The powers of ten from lo to hi (the multiples of every second, third, ... exponent over
// more than eight decades), and 2 and 5 times them when the range spans two decades or less.
std::vector<double> log_ticks(double lo, double hi) {
    const int e0 = static_cast<int>(std::floor(std::log10(lo))), e1 = static_cast<int>(std::ceil(std::log10(hi)));
    const int every = std::max(1, (e1 - e0 + 7) / 8);
    const std::vector<double> mantissas = std::log10(hi / lo) <= 2 ? std::vector<double>{1, 2, 5} : std::vector<double>{1};
    std::vector<double> t;
    for (int e = every * static_cast<int>(std::ceil(static_cast<double>(e0) / every)); e <= e1; e += every)
        for (double m : mantissas) {
            const double v = m * std::pow(10.0, e);
            if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
        }
    return t;
}

std::string tick_label(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return b;
}

}  // namespace

void write_png_grid(const std::string& path, const Tensor& images, const GridOptions& o) {
    Shape s = images.shape();
    if (s.size() == 4 && s[1] == 1) s = {s[0], s[2], s[3]};
    if (s.size() != 3) fail("images", "write_png_grid: images must be [N, H, W] or [N, 1, H, W], got ", shape_str(images.shape()));
    if (o.cols < 1) fail("cols", "write_png_grid: cols is ", o.cols, ", must be >= 1");
    if (o.zoom < 1) fail("zoom", "write_png_grid: zoom is ", o.zoom, ", must be >= 1");
    const std::int64_t N = s[0], H = s[1], W = s[2];
    const std::int64_t rows = (N + o.cols - 1) / o.cols, border = 2;
    if (!o.row_labels.empty() && static_cast<std::int64_t>(o.row_labels.size()) != rows)
        fail("row_labels", "write_png_grid: ", o.row_labels.size(), " row labels for ", rows, " rows of images");

    // The text's room: a band above for the title, a column on the left for the row labels.
    Surface scratch = make_surface(1, 1);
    Context m = make_context(scratch.get());
    set_font(m.get(), 14);
    double label_w = 0;
    for (const std::string& l : o.row_labels) label_w = std::max(label_w, text_width(m.get(), l));
    const std::int64_t left = label_w > 0 ? static_cast<std::int64_t>(std::ceil(label_w)) + 16 : 0;
    const std::int64_t top = o.title.empty() ? 0 : 30;
    const std::int64_t grid_w = std::min<std::int64_t>(o.cols, std::max<std::int64_t>(N, 1)) * (W * o.zoom + border) + border;
    const std::int64_t grid_h = rows * (H * o.zoom + border) + border;
    set_font(m.get(), 15, true);
    const std::int64_t width = std::max(left + grid_w, static_cast<std::int64_t>(std::ceil(text_width(m.get(), o.title))) + 16),
                       height = top + grid_h;
    if (width > kMaxSide || height > kMaxSide)
        fail("images", "write_png_grid: the picture would be ", width, "x", height, " pixels, more than ", kMaxSide, " a side");

    Surface canvas = make_surface(static_cast<int>(width), static_cast<int>(height));
    cairo_surface_flush(canvas.get());
    unsigned char* data = cairo_image_surface_get_data(canvas.get());
    const std::int64_t stride = cairo_image_surface_get_stride(canvas.get());
    auto pixel = [&](std::int64_t x, std::int64_t y) { return reinterpret_cast<std::uint32_t*>(data + y * stride) + x; };
    for (std::int64_t y = 0; y < height; ++y)
        for (std::int64_t x = 0; x < width; ++x) {
            const bool in_grid = x >= left && x < left + grid_w && y >= top;
            *pixel(x, y) = in_grid ? 0x282828u : 0xffffffu;  // dark grey borders, white around
        }
    const std::vector<double> v = images.values();
    for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t oy = top + border + (n / o.cols) * (H * o.zoom + border);
        const std::int64_t ox = left + border + (n % o.cols) * (W * o.zoom + border);
        for (std::int64_t y = 0; y < H * o.zoom; ++y)
            for (std::int64_t x = 0; x < W * o.zoom; ++x) {
                const double val = v[static_cast<std::size_t>((n * H + y / o.zoom) * W + x / o.zoom)];
                const auto g = static_cast<std::uint32_t>(std::isnan(val) ? 0.0 : std::clamp(val, 0.0, 1.0) * 255.0 + 0.5);
                *pixel(ox + x, oy + y) = g << 16 | g << 8 | g;
            }
    }
    cairo_surface_mark_dirty(canvas.get());

    Context cr = make_context(canvas.get());
    cairo_set_source_rgb(cr.get(), 0, 0, 0);
    set_font(cr.get(), 15, true);
    draw_text(cr.get(), static_cast<double>(width) / 2, top / 2.0, o.title, 0.5, 0.5);
    set_font(cr.get(), 14);
    for (std::int64_t r = 0; r < static_cast<std::int64_t>(o.row_labels.size()); ++r)
        draw_text(cr.get(), static_cast<double>(left - 8),
                  static_cast<double>(top + border + r * (H * o.zoom + border)) + H * o.zoom / 2.0,
                  o.row_labels[static_cast<std::size_t>(r)], 1, 0.5);
    check_drawn(cr.get(), path);
    write_surface(path, canvas.get());
}

PlotFrame plot_frame(const std::vector<PlotSeries>& series, const PlotOptions& o) {
    if (o.width < 160 || o.height < 120 || o.width > 8192 || o.height > 8192)
        fail("size", "write_png_plot: the size is ", o.width, "x", o.height, ", must be from 160x120 to 8192x8192");
    PlotFrame f;
    PlotAxis &ax = f.x, &ay = f.y;
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (const PlotSeries& s : series) {
        if (s.x.size() != s.y.size())
            fail("series", "write_png_plot: series '", s.name, "' has ", s.x.size(), " x and ", s.y.size(), " y");
        for (std::size_t i = 0; i < s.x.size(); ++i)
            if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) {
                x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
                y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
            }
    }
    if (!(x0 <= x1)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;  // nothing to draw: empty axes
    ay.log = o.log_y ? *o.log_y : (y0 > 0 && y1 > 10 * y0);
    if (ay.log && !(y0 > 0))
        fail("log_y", "write_png_plot: log_y is set, but a log-scale y axis needs every y positive; the smallest is ", y0);
    if (x1 - x0 <= 1e-12 * std::max(1.0, std::abs(x0))) x0 -= 0.5, x1 += 0.5;
    if (ay.log) {
        const double l0 = std::log10(y0), l1 = std::log10(y1), pad = 0.05 * std::max(l1 - l0, 0.1);
        ay.lo = std::pow(10.0, l0 - pad), ay.hi = std::pow(10.0, l1 + pad);
        ay.ticks = log_ticks(ay.lo, ay.hi);
    } else {
        if (y1 - y0 <= 1e-12 * std::max(1.0, std::abs(y0))) y0 -= 0.5, y1 += 0.5;
        const double pad = 0.05 * (y1 - y0);
        ay.lo = y0 - pad, ay.hi = y1 + pad;
        ay.ticks = linear_ticks(ay.lo, ay.hi, std::max(2, o.height / 70));
    }
    ax.lo = x0, ax.hi = x1;
    ax.ticks = linear_ticks(ax.lo, ax.hi, std::max(2, o.width / 110));

    return f;
}

void write_png_plot(const std::string& path, const std::vector<PlotSeries>& series, const PlotOptions& o) {
    const PlotFrame f = plot_frame(series, o);
    const PlotAxis &ax = f.x, &ay = f.y;
    Surface canvas = make_surface(o.width, o.height);
    Context c = make_context(canvas.get());
    cairo_t* cr = c.get();
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);

    // The plot area: room on the left for the y tick values and the y axis name, below for
    // the x tick values and the x axis name, above for the title.
    set_font(cr, 12);
    double tick_w = 0;
    for (double t : ay.ticks) tick_w = std::max(tick_w, text_width(cr, tick_label(t)));
    const double left = 12 + (o.y_label.empty() ? 0 : 22) + tick_w + 8, right = o.width - 20.0;
    const double top = o.title.empty() ? 16.0 : 44.0, bottom = o.height - (o.x_label.empty() ? 28.0 : 52.0);
    auto px = [&](double x) { return left + frac(ax, x) * (right - left); };
    auto py = [&](double y) { return bottom - frac(ay, y) * (bottom - top); };

    // Grid lines and ticks with their values.
    cairo_set_line_width(cr, 1);
    for (double t : ax.ticks) {
        cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
        cairo_move_to(cr, std::round(px(t)) + 0.5, top), cairo_line_to(cr, std::round(px(t)) + 0.5, bottom);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_move_to(cr, std::round(px(t)) + 0.5, bottom), cairo_line_to(cr, std::round(px(t)) + 0.5, bottom + 5);
        cairo_stroke(cr);
        draw_text(cr, px(t), bottom + 16, tick_label(t), 0.5, 0.5);
    }
    for (double t : ay.ticks) {
        cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
        cairo_move_to(cr, left, std::round(py(t)) + 0.5), cairo_line_to(cr, right, std::round(py(t)) + 0.5);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_move_to(cr, left - 5, std::round(py(t)) + 0.5), cairo_line_to(cr, left, std::round(py(t)) + 0.5);
        cairo_stroke(cr);
        draw_text(cr, left - 8, py(t), tick_label(t), 1, 0.5);
    }
    cairo_rectangle(cr, std::round(left) + 0.5, std::round(top) + 0.5, std::round(right - left), std::round(bottom - top));
    cairo_stroke(cr);

    // The axis names and the title.
    set_font(cr, 13);
    draw_text(cr, (left + right) / 2, o.height - 14.0, o.x_label, 0.5, 0.5);
    if (!o.y_label.empty()) {
        cairo_save(cr);
        cairo_translate(cr, 18, (top + bottom) / 2);
        cairo_rotate(cr, -M_PI / 2);
        draw_text(cr, 0, 0, o.y_label + (ay.log ? " (log scale)" : ""), 0.5, 0.5);
        cairo_restore(cr);
    }
    set_font(cr, 15, true);
    draw_text(cr, o.width / 2.0, 22, o.title, 0.5, 0.5);

    // The series, clipped to the plot area.
    cairo_save(cr);
    cairo_rectangle(cr, left, top, right - left, bottom - top);
    cairo_clip(cr);
    cairo_set_line_width(cr, 2);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    for (const PlotSeries& s : series) {
        set_rgb(cr, s.rgb);
        bool have = false;
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
            if (have) cairo_line_to(cr, px(s.x[i]), py(s.y[i]));
            else cairo_move_to(cr, px(s.x[i]), py(s.y[i]));
            have = true;
        }
        cairo_stroke(cr);
        if (s.markers)
            for (std::size_t i = 0; i < s.x.size(); ++i)
                if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) cairo_rectangle(cr, px(s.x[i]) - 3, py(s.y[i]) - 3, 6, 6);
        cairo_fill(cr);
    }
    cairo_restore(cr);

    // The legend: a box in the upper right corner, one line per named series.
    set_font(cr, 12);
    std::vector<const PlotSeries*> named;
    double name_w = 0;
    for (const PlotSeries& s : series)
        if (!s.name.empty()) named.push_back(&s), name_w = std::max(name_w, text_width(cr, s.name));
    if (!named.empty()) {
        const double line_h = 18, box_w = 8 + 28 + 6 + name_w + 8, box_h = 6 + line_h * named.size() + 2;
        const double bx = right - 10 - box_w, by = top + 10;
        cairo_rectangle(cr, std::round(bx) + 0.5, std::round(by) + 0.5, std::round(box_w), std::round(box_h));
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_fill_preserve(cr);
        cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
        cairo_set_line_width(cr, 1);
        cairo_stroke(cr);
        for (std::size_t i = 0; i < named.size(); ++i) {
            const double y = by + 6 + line_h * (i + 0.5);
            set_rgb(cr, named[i]->rgb);
            cairo_set_line_width(cr, 2);
            cairo_move_to(cr, bx + 8, y), cairo_line_to(cr, bx + 36, y);
            cairo_stroke(cr);
            if (named[i]->markers) cairo_rectangle(cr, bx + 22 - 3, y - 3, 6, 6), cairo_fill(cr);
            cairo_set_source_rgb(cr, 0, 0, 0);
            draw_text(cr, bx + 42, y, named[i]->name, 0, 0.5);
        }
    }
    check_drawn(cr, path);
    write_surface(path, canvas.get());
}

}  // namespace tg
