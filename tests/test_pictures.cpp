// The pictures (tapegrad/data/image.hpp): the plot's frame (ranges, log scale, round ticks) computed
// by hand, and the PNGs read back through cairo's own PNG reader: their size, the image
// pixels of a grid, and ink where the title, axis names, tick values and legend go.
#include <catch2/catch.hpp>

#include <cairo.h>

#include <cmath>
#include <cstdint>
#include <functional>

#include "support_files.hpp"
#include "tapegrad/core/error.hpp"
#include "tapegrad/data/image.hpp"

using namespace tg;
using tg::testsov::TempDir;

namespace {

// A PNG read back as 0xRRGGBB pixels.
struct Picture {
    int width = 0, height = 0;
    std::vector<std::uint32_t> px;
    explicit Picture(const std::string& path) {
        cairo_surface_t* s = cairo_image_surface_create_from_png(path.c_str());
        REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
        width = cairo_image_surface_get_width(s), height = cairo_image_surface_get_height(s);
        const unsigned char* d = cairo_image_surface_get_data(s);
        const int stride = cairo_image_surface_get_stride(s);
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x) px.push_back(reinterpret_cast<const std::uint32_t*>(d + y * stride)[x] & 0xffffffu);
        cairo_surface_destroy(s);
    }
    std::uint32_t at(int x, int y) const { return px[static_cast<std::size_t>(y) * width + x]; }
    // Pixels in [x0, x1) x [y0, y1) with a channel below 128: text, axes, lines, not the
    // light grid or the white canvas.
    int ink(int x0, int y0, int x1, int y1) const {
        int n = 0;
        for (int y = y0; y < y1; ++y)
            for (int x = x0; x < x1; ++x) {
                const std::uint32_t p = at(x, y);
                n += (p >> 16 & 255) < 128 || (p >> 8 & 255) < 128 || (p & 255) < 128;
            }
        return n;
    }
};

std::vector<double> seq(int n, const std::function<double(int)>& f) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(f(i));
    return v;
}

}  // namespace

TEST_CASE("plot frame: round linear ticks, the log scale past a decade, the 5% room", "[pictures]") {
    PlotSeries s{"loss", {0, 1, 2, 3}, {0.9, 0.7, 0.6, 0.5}, {0, 0, 255}, false};
    PlotFrame f = plot_frame({s});
    CHECK(!f.y.log);  // 0.9 / 0.5 < 10
    CHECK(f.x.lo == 0);
    CHECK(f.x.hi == 3);
    CHECK(f.y.lo == Approx(0.5 - 0.02));
    CHECK(f.y.hi == Approx(0.9 + 0.02));
    // x from 0 to 3 with about 7 ticks (800 / 110): a step of 0.5.
    CHECK_THAT(f.x.ticks, Catch::Matchers::Approx(std::vector<double>{0, 0.5, 1, 1.5, 2, 2.5, 3}));
    // y from 0.48 to 0.92 with about 7 ticks (500 / 70): 0.44 / 7 = 0.063 -> a step of 0.1.
    CHECK_THAT(f.y.ticks, Catch::Matchers::Approx(std::vector<double>{0.5, 0.6, 0.7, 0.8, 0.9}));

    s.y = {2.3, 0.9, 0.2, 0.05};  // 46x: more than a decade
    f = plot_frame({s});
    REQUIRE(f.y.log);
    const double pad = 0.05 * std::log10(46.0);
    CHECK(std::log10(f.y.lo) == Approx(std::log10(0.05) - pad));
    CHECK(std::log10(f.y.hi) == Approx(std::log10(2.3) + pad));
    // Two decades or less: 1, 2 and 5 times the powers of ten inside the range.
    CHECK_THAT(f.y.ticks, Catch::Matchers::Approx(std::vector<double>{0.05, 0.1, 0.2, 0.5, 1, 2}));

    PlotOptions linear;
    linear.log_y = false;
    CHECK(!plot_frame({s}, linear).y.log);
    s.y = {1e-6, 1e3, 1, 1};  // nine decades: the powers of ten, every second one
    f = plot_frame({s});
    REQUIRE(f.y.log);
    CHECK_THAT(f.y.ticks, Catch::Matchers::Approx(std::vector<double>{1e-6, 1e-4, 1e-2, 1, 1e2}));

    s.y = {0, 1, 100, 1000};  // not all positive: linear, whatever the range
    CHECK(!plot_frame({s}).y.log);
    PlotOptions log;
    log.log_y = true;
    CHECK_THROWS_WITH(plot_frame({s}, log), Catch::Contains("log_y") && Catch::Contains("smallest is 0"));

    // NaN and infinite points are skipped; with no finite point the axes run from 0 to 1.
    f = plot_frame({PlotSeries{"", {0, NAN, 2}, {1, 5, INFINITY}, {}, false}});
    CHECK(f.x.lo == -0.5);  // one point at x = 0: half a unit either side
    CHECK(f.x.hi == 0.5);
    f = plot_frame({PlotSeries{"", {NAN}, {1}, {}, false}});
    CHECK(f.x.lo == 0);
    CHECK(f.x.hi == 1);
}

TEST_CASE("plot: the PNG has its size, and ink where the title, axis names, tick values and legend go", "[pictures]") {
    TempDir dir;
    const std::string path = dir / "plot.png";
    const std::vector<double> x = seq(50, [](int i) { return i / 10.0; });
    PlotSeries train{"train loss", x, seq(50, [](int i) { return 0.2 + 2.0 / (1 + i); }), {31, 119, 180}, false};
    PlotSeries test{"test loss", {1, 2, 3, 4}, {1.0, 0.6, 0.45, 0.4}, {255, 127, 14}, true};
    PlotOptions o;
    o.title = "a demanding title";
    o.x_label = "epoch", o.y_label = "loss";
    o.width = 640, o.height = 400;
    write_png_plot(path, {train, test}, o);
    const Picture p(path);
    REQUIRE(p.width == 640);
    REQUIRE(p.height == 400);
    CHECK(p.ink(220, 8, 420, 34) > 100);    // the title, centred on top
    CHECK(p.ink(280, 374, 360, 398) > 30);  // "epoch", centred at the bottom
    CHECK(p.ink(4, 150, 30, 250) > 30);     // "loss (log scale)", turned, on the left
    CHECK(p.ink(40, 356, 620, 374) > 60);   // the x tick values under the axis
    CHECK(p.ink(30, 50, 54, 340) > 60);     // the y tick values left of the axis
    CHECK(p.ink(480, 54, 610, 100) > 100);  // the legend: two sample lines and two names

    // Without a title, names and legend those places stay empty.
    PlotOptions bare;
    bare.width = 640, bare.height = 400;
    train.name.clear(), test.name.clear();
    write_png_plot(path, {train, test}, bare);
    const Picture q(path);
    CHECK(q.ink(0, 0, 640, 14) == 0);
    CHECK(q.ink(0, 396, 640, 400) == 0);
    CHECK(q.ink(480, 30, 610, 60) == 0);  // the plot area's upper right: the curves run low there
}

TEST_CASE("plot: bad arguments are named", "[pictures][errors]") {
    TempDir dir;
    PlotOptions o;
    o.width = 100;
    CHECK_THROWS_WITH(write_png_plot(dir / "a.png", {}, o), Catch::Contains("100x500") && Catch::Contains("160x120"));
    PlotSeries s{"ragged", {1, 2}, {1}, {}, false};
    CHECK_THROWS_WITH(write_png_plot(dir / "a.png", {s}), Catch::Contains("series 'ragged' has 2 x and 1 y"));
    CHECK_THROWS_WITH(write_png_plot(dir / "no/such/dir/a.png", {}), Catch::Contains("no/such/dir/a.png"));
}

TEST_CASE("grid: image pixels exact, the title and row labels beside them", "[pictures]") {
    TempDir dir;
    // Two 2x3 images, values 0, 0.2, ..., 1 and 1, 0.8, ..., 0 (and a NaN drawn black).
    std::vector<double> v = {0, 0.2, 0.4, 0.6, 0.8, 1, 1, 0.8, 0.6, 0.4, 0.2, NAN};
    const Tensor images = Tensor::from({2, 2, 3}, v, DType::f64);
    GridOptions plain{1, 8, "", {}};  // one per row, zoom 8
    write_png_grid(dir / "plain.png", images, plain);
    const Picture p(dir / "plain.png");
    REQUIRE(p.width == 1 * (3 * 8 + 2) + 2);
    REQUIRE(p.height == 2 * (2 * 8 + 2) + 2);
    for (int n = 0; n < 2; ++n)
        for (int y = 0; y < 16; ++y)
            for (int x = 0; x < 24; ++x) {
                const double val = v[static_cast<std::size_t>(n * 6 + y / 8 * 3 + x / 8)];
                const auto g = static_cast<std::uint32_t>(std::isnan(val) ? 0 : std::lround(val * 255));
                CHECK(p.at(2 + x, 2 + n * 18 + y) == (g << 16 | g << 8 | g));
            }
    CHECK(p.at(0, 0) == 0x282828u);  // the border

    GridOptions labelled{1, 8, "two", {"first", "second"}};
    write_png_grid(dir / "labelled.png", images, labelled);
    const Picture q(dir / "labelled.png");
    REQUIRE(q.height == p.height + 30);
    const int left = q.width - p.width;
    REQUIRE(left > 30);  // room for "second"
    for (int y = 0; y < p.height; ++y)
        for (int x = 0; x < p.width; ++x) CHECK(q.at(left + x, 30 + y) == p.at(x, y));
    CHECK(q.ink(0, 0, q.width, 30) > 50);      // the title
    CHECK(q.ink(0, 30, left, 49) > 10);        // "first", beside row 1 (its middle at y = 40)
    CHECK(q.ink(0, 49, left, q.height) > 10);  // "second", beside row 2 (at y = 58)
}

TEST_CASE("grid: bad arguments are named", "[pictures][errors]") {
    TempDir dir;
    const Tensor images = Tensor::zeros({3, 4, 4});
    CHECK_THROWS_WITH(write_png_grid(dir / "g.png", images, GridOptions{2, 1, "", {"one"}}),
                      Catch::Contains("1 row labels for 2 rows"));
    CHECK_THROWS_WITH(write_png_grid(dir / "g.png", images, GridOptions{0, 1, "", {}}), Catch::Contains("cols is 0"));
    CHECK_THROWS_WITH(write_png_grid(dir / "g.png", images, GridOptions{1, 0, "", {}}), Catch::Contains("zoom is 0"));
    CHECK_THROWS_WITH(write_png_grid(dir / "g.png", Tensor::zeros({4, 4}), GridOptions{}), Catch::Contains("[4, 4]"));
    CHECK_THROWS_WITH(write_png_grid(dir / "g.png", Tensor::zeros({1, 4, 4}), GridOptions{1, 10000, "", {}}),
                      Catch::Contains("40004x40004") && Catch::Contains("32767"));
}
