// Lesson 2: transposed convolution explained on one configuration (docs/lessons.md, section 2).
//
// The layer: nn::ConvTranspose, 2-D, 2 -> 3 channels, input 3×3, kernel 3×3, stride 2,
// padding 1, output_padding 1, and dilation 1 on axis H but 2 on axis W, so that the two
// axes show two behaviours side by side:
//   H (d = 1)   the classic "exact 2× upsampling" setting: 3 -> 6, every output is fed
//   W (d = 2)   3 -> 8, and every other output column receives nothing (d = s leaves holes)
//
// The program shows four things and checks each as it goes (a claim that stops being true
// ends it with `error: claim failed: ...` and exit status 1):
//   1. the size arithmetic, per axis, against the shape the layer returns;
//   2. which inputs feed which outputs: a diagram per axis and a count per output on the
//      terminal, and a picture, <out>/transposed_conv_footprints.png;
//   3. the equivalence with an ordinary convolution: insert s−1 zeros between the inputs, pad
//      by d·(k−1)−p on each side (plus output_padding at the end), and correlate with the
//      spatially flipped kernel, in and out channels swapped. Done by hand with plain loops
//      and compared with the layer;
//   4. why output_padding exists: two input sizes of the forward convolution give the same
//      output size under stride 2, and output_padding says which one to go back to.
//
// Run: build/release/transposed_conv_explained [--out DIR]   (ctest runs it)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "lesson.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/core/factories.hpp"
#include "tapegrad/data/image.hpp"
#include "tapegrad/nn/module.hpp"

using namespace tg;
using tg::lesson::claim;

// One spatial axis of the configuration. Everything a transposed convolution does along an
// axis follows from these six numbers.
struct Axis {
    const char* name;
    int in, k, s, p, d, op;  // input size, kernel, stride, padding, dilation, output_padding

    // The size rule: out = (in − 1)·s − 2p + d·(k − 1) + output_padding + 1.
    int out() const { return (in - 1) * s - 2 * p + d * (k - 1) + op + 1; }
    // The definition, in the "scatter" view: input position x adds its value times kernel
    // tap t into output position y = x·s + t·d − p (when 0 ≤ y < out).
    int target(int x, int t) const { return x * s + t * d - p; }
    // How many (input, tap) pairs land on output y.
    int taps(int y) const {
        int n = 0;
        for (int x = 0; x < in; ++x)
            for (int t = 0; t < k; ++t) n += target(x, t) == y;
        return n;
    }
    // The equivalent convolution's padding before the zero-stuffed input (after it, lead + op).
    int lead() const { return d * (k - 1) - p; }
};

constexpr Axis kH{"H", 3, 3, 2, 1, 1, 1};
constexpr Axis kW{"W", 3, 3, 2, 1, 2, 1};
constexpr int kCin = 2, kCout = 3;

// The layer's options, from the two axes (one value per axis).
nn::ConvOptions options() {
    return nn::ConvOptions{kH.k, kW.k}
        .stride({kH.s, kW.s})
        .padding({kH.p, kW.p})
        .dilation({kH.d, kW.d})
        .output_padding({kH.op, kW.op})
        .bias(false)
        .dtype(DType::f64);
}

double dot(const Tensor& a, const Tensor& b) {
    const std::vector<double> x = a.values(), y = b.values();
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
    return s;
}

// ---------------------------------------------------------------------------------------
// 1. Sizes
// ---------------------------------------------------------------------------------------
void sizes(const Tensor& result) {
    std::printf("1. Sizes, per axis: out = (in − 1)·s − 2·p + d·(k − 1) + output_padding + 1\n");
    for (const Axis& a : {kH, kW})
        std::printf("   axis %s: (%d − 1)·%d − 2·%d + %d·(%d − 1) + %d + 1 = %d\n", a.name,
                    a.in, a.s, a.p, a.d, a.k, a.op,
                    a.out());
    std::printf("   the layer maps [1, %d, %d, %d] to %s\n\n", kCin, kH.in, kW.in,
                shape_str(result.shape()).c_str());
    claim(result.shape() == Shape{1, kCout, kH.out(), kW.out()}, "the layer's result shape ", shape_str(result.shape()),
          " follows the size rule");
}

// ---------------------------------------------------------------------------------------
// 2. Which inputs feed which outputs
// ---------------------------------------------------------------------------------------

// One axis as a table: row x shows the tap t that input x sends to each position y, over
// the whole reach of the kernel, y from −p to (in−1)·s + (k−1)·d − p. Padding cuts p
// positions at each end; output_padding gives back op of those at the end.
void axis_diagram(const Axis& a) {
    const int lo = a.target(0, 0), hi = a.target(a.in - 1, a.k - 1);
    std::printf("   axis %s: input x sends kernel tap t to output y = x·%d + t·%d − %d\n", a.name, a.s,
                a.d, a.p);
    std::printf("          y:");
    for (int y = lo; y <= hi; ++y) std::printf("%4d", y);
    for (int x = 0; x < a.in; ++x) {
        std::printf("\n        x=%d:", x);
        for (int y = lo; y <= hi; ++y) {
            int tap = -1;
            for (int t = 0; t < a.k; ++t)
                if (a.target(x, t) == y) tap = t;
            tap < 0 ? std::printf("   .") : std::printf("%4d", tap);
        }
    }
    std::printf("\n       taps:");
    for (int y = lo; y <= hi; ++y) {
        if (y < 0 || y >= a.out()) std::printf(" cut");
        else std::printf("%3d%s", a.taps(y), y >= a.out() - a.op ? "*" : " ");
    }
    std::printf("\n   (cut: outside the result, removed by the padding; *: the position output_padding keeps)\n");
}

// Each input's footprint, computed by the library: a one-channel ConvTranspose with an
// all-ones kernel turns a one-hot input into 1 at every output that input feeds. All
// in_H·in_W one-hot images go through as one batch. Returns [in_H·in_W, out_H, out_W].
Tensor footprints() {
    nn::ConvTranspose ones_layer(1, 1, options());
    ones_layer.weight.assign(ones(ones_layer.weight.shape(), DType::f64));
    const int n = kH.in * kW.in;  // one image per input position, each of n pixels
    Tensor onehot = zeros({n, 1, kH.in, kW.in}, DType::f64);
    for (int i = 0; i < n; ++i) onehot.data<double>()[i * n + i] = 1;  // image i: pixel i is 1
    return ones_layer(ag::constant(onehot)).value().reshape({n, kH.out(), kW.out()}).contiguous();
}

void which_inputs_feed_which_outputs(const std::filesystem::path& out_dir) {
    std::printf("2. Which inputs feed which outputs\n");
    axis_diagram(kH);
    axis_diagram(kW);

    // In 2-D the rule holds per axis, so an output gets taps_H(y_h)·taps_W(y_w) contributions.
    std::printf("   contributions per output position (rows y_h, columns y_w; 0: no input reaches it):\n");
    for (int yh = 0; yh < kH.out(); ++yh) {
        std::printf("     ");
        for (int yw = 0; yw < kW.out(); ++yw) std::printf("%2d", (kH.taps(yh) * kW.taps(yw)));
        std::printf("\n");
    }

    // The library agrees: input (xh, xw) feeds exactly the outputs the scatter rule names.
    const Tensor fp = footprints();
    const double* f = fp.data<double>();
    for (int xh = 0; xh < kH.in; ++xh)
        for (int xw = 0; xw < kW.in; ++xw)
            for (int yh = 0; yh < kH.out(); ++yh)
                for (int yw = 0; yw < kW.out(); ++yw) {
                    bool fed = false;
                    for (int th = 0; th < kH.k; ++th)
                        for (int tw = 0; tw < kW.k; ++tw)
                            fed = fed || (kH.target(xh, th) == yh && kW.target(xw, tw) == yw);
                    const double v = f[((xh * kW.in + xw) * kH.out() + yh) * kW.out() + yw];
                    claim(v == (fed ? 1.0 : 0.0), "input (", xh, ", ", xw, ") feeds output (", yh, ", ", yw,
                          ") exactly when y = x·s + t·d − p for some tap t on both axes");
                }

    // The picture: one tile per input position, laid out as the input is (3 per row). In
    // tile (x_h, x_w), each output position is a square: black = fed by this input, grey =
    // fed by other inputs only, white = fed by no input (the holes of axis W).
    const int cell = 20, plane = kH.out() * kW.out();
    const int inputs = kH.in * kW.in;
    Tensor tiles = zeros({inputs, kH.out() * cell, kW.out() * cell}, DType::f64);
    double* t = tiles.data<double>();
    for (int n = 0; n < inputs; ++n)
        for (int py = 0; py < kH.out() * cell; ++py)
            for (int px = 0; px < kW.out() * cell; ++px) {
                const int yh = py / cell, yw = px / cell;
                const bool mine = f[n * plane + yh * kW.out() + yw] == 1, anyone = kH.taps(yh) * kW.taps(yw) > 0;
                double v = mine ? 0.0 : anyone ? 0.55 : 1.0;
                if (py % cell == 0 || px % cell == 0) v = 0.8;  // thin lines between positions
                t[(n * kH.out() * cell + py) * kW.out() * cell + px] = v;
            }
    const std::string png = (out_dir / "transposed_conv_footprints.png").string();
    GridOptions grid;
    grid.cols = kW.in, grid.zoom = 1, grid.title = "which outputs each input feeds (row x_h, column x_w)";
    for (int xh = 0; xh < kH.in; ++xh) grid.row_labels.push_back("x_h = " + std::to_string(xh));
    write_png_grid(png, tiles, grid);
    std::printf("   picture: %s (tile (x_h, x_w): black = fed by that input, grey = by others, white = by none)\n\n",
                png.c_str());
}

// ---------------------------------------------------------------------------------------
// 3. The equivalent ordinary convolution, by hand
// ---------------------------------------------------------------------------------------

// What kind of entry position i of the stuffed, padded axis holds.
enum class Slot { Pad, OutputPad, Input, Stuffed };
Slot slot(const Axis& a, int i) {
    const int j = i - a.lead(), span = (a.in - 1) * a.s + 1;  // j: position in the stuffed input
    if (j < 0) return Slot::Pad;
    if (j >= span + a.lead()) return Slot::OutputPad;
    if (j >= span) return Slot::Pad;
    return j % a.s == 0 ? Slot::Input : Slot::Stuffed;
}

void equivalent_convolution(const Tensor& u, const Tensor& weight, const Tensor& result) {
    std::printf("3. The same result from an ordinary convolution, by hand\n");
    // Step 1 and 2: the zero-stuffed, padded input z[ci, i_h, i_w]: s − 1 zeros between
    // neighbouring inputs, d·(k − 1) − p zeros before, d·(k − 1) − p + output_padding after.
    // (Here d·(k−1) − p ≥ 0; were it negative, the stuffed input would be cropped instead.)
    const int zh = (kH.in - 1) * kH.s + 1 + 2 * kH.lead() + kH.op;
    const int zw = (kW.in - 1) * kW.s + 1 + 2 * kW.lead() + kW.op;
    const std::vector<double> uv = u.values();
    std::vector<double> z(kCin * zh * zw, 0.0);
    for (int c = 0; c < kCin; ++c)
        for (int xh = 0; xh < kH.in; ++xh)
            for (int xw = 0; xw < kW.in; ++xw)
                z[(c * zh + kH.lead() + xh * kH.s) * zw + kW.lead() + xw * kW.s] =
                    uv[(c * kH.in + xh) * kW.in + xw];

    std::printf("   the stuffed, padded input of one channel, %d×%d (a-i: the 3×3 inputs; o: stuffed zeros;\n"
                "   .: padding d·(k−1) − p = %d on H, %d on W; +: output_padding):\n",
                zh, zw, kH.lead(), kW.lead());
    char name = 'a';
    for (int ih = 0; ih < zh; ++ih) {
        std::printf("     ");
        for (int iw = 0; iw < zw; ++iw) {
            const Slot sh = slot(kH, ih), sw = slot(kW, iw);
            char ch = 'o';
            if (sh == Slot::OutputPad || sw == Slot::OutputPad) ch = '+';
            else if (sh == Slot::Pad || sw == Slot::Pad) ch = '.';
            else if (sh == Slot::Input && sw == Slot::Input) ch = name++;
            std::printf(" %c", ch);
        }
        std::printf("\n");
    }

    // Step 3: the kernel flipped in space, with in and out channels swapped:
    //   wf[co, ci, t_h, t_w] = W[ci, co, k_h − 1 − t_h, k_w − 1 − t_w]   (W: the layer's [C_in, C_out, k_h, k_w])
    const std::vector<double> wv = weight.values();
    std::vector<double> wf(wv.size());
    for (int ci = 0; ci < kCin; ++ci)
        for (int co = 0; co < kCout; ++co)
            for (int th = 0; th < kH.k; ++th)
                for (int tw = 0; tw < kW.k; ++tw)
                    wf[((co * kCin + ci) * kH.k + th) * kW.k + tw] =
                        wv[((ci * kCout + co) * kH.k + (kH.k - 1 - th)) * kW.k + (kW.k - 1 - tw)];

    // Step 4: an ordinary correlation of z with wf, stride 1, no padding, the same dilation:
    //   r[co, y_h, y_w] = Σ_ci Σ_th Σ_tw z[ci, y_h + t_h·d_h, y_w + t_w·d_w] · wf[co, ci, t_h, t_w]
    std::vector<double> r(kCout * kH.out() * kW.out(), 0.0);
    for (int co = 0; co < kCout; ++co)
        for (int yh = 0; yh < kH.out(); ++yh)
            for (int yw = 0; yw < kW.out(); ++yw) {
                double acc = 0;
                for (int ci = 0; ci < kCin; ++ci)
                    for (int th = 0; th < kH.k; ++th)
                        for (int tw = 0; tw < kW.k; ++tw)
                            acc += z[(ci * zh + yh + th * kH.d) * zw + yw + tw * kW.d] *
                                   wf[((co * kCin + ci) * kH.k + th) * kW.k + tw];
                r[(co * kH.out() + yh) * kW.out() + yw] = acc;
            }

    // Its size is zh − d_h·(k_h − 1) by zw − d_w·(k_w − 1): the size rule again.
    const std::vector<double> lib = result.values();
    claim(lib.size() == r.size(), "the correlation's result has the layer's size");
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < r.size(); ++i) {
        worst = std::max(worst, std::fabs(r[i] - lib[i]));
        scale = std::max(scale, std::fabs(lib[i]));
    }
    std::printf("   the kernel flipped, channels swapped: wf[co, ci, t_h, t_w] = W[ci, co, %d − t_h, %d − t_w]\n"
                "   correlated with it (stride 1, dilation %d×%d): %d − %d·%d = %d by %d − %d·%d = %d outputs\n"
                "   max |by hand − layer| = %.3g (values up to %.3g)\n\n",
                kH.k - 1, kW.k - 1, kH.d, kW.d, zh, kH.d, kH.k - 1, zh - kH.d * (kH.k - 1), zw, kW.d, kW.k - 1,
                zw - kW.d * (kW.k - 1), worst, scale);
    claim(worst <= 1e-12 * scale, "stuff, pad, flip and correlate gives the layer's result (max diff ", worst, ")");
}

// ---------------------------------------------------------------------------------------
// 4. Why output_padding exists
// ---------------------------------------------------------------------------------------

// The forward convolution's output size for an input of size x (ConvGeometry applies the
// library's rule: ⌊(x + 2p − d·(k−1) − 1)/s⌋ + 1).
int forward_size(const Axis& a, int x) {
    return static_cast<int>(ConvGeometry::forward({.C_in = 1, .C_out = 1, .in_size = {x}, .kernel = {a.k}, .stride = {a.s},
                                  .dilation = {a.d}, .pads_begin = {a.p}, .pads_end = {a.p}})
        .out_size[0]);
}

void why_output_padding(nn::ConvTranspose& layer, const Tensor& u, const Tensor& result) {
    std::printf("4. Why output_padding exists\n");
    for (const Axis& a : {kH, kW}) {
        Axis no_op = a, too_far = a;
        no_op.op = 0;
        too_far.op = a.s;
        std::printf("   axis %s: the forward convolution (k %d, s %d, p %d, d %d) maps size %d to %d and size %d to %d,\n",
                    a.name, a.k, a.s, a.p, a.d, no_op.out(), forward_size(a, no_op.out()), a.out(),
                    forward_size(a, a.out()));
        std::printf("           so the transposed one cannot tell which to return to: output_padding 0 gives %d, "
                    "1 gives %d.\n",
                    no_op.out(), a.out());
        std::printf("           (output_padding %d would give %d, which the forward convolution maps to %d: "
                    "so it stays below s.)\n",
                    too_far.op, too_far.out(), forward_size(a, too_far.out()));
        claim(forward_size(a, no_op.out()) == a.in && forward_size(a, a.out()) == a.in,
              "axis ", a.name, ": both candidate sizes convolve back to ", a.in);
        claim(forward_size(a, too_far.out()) != a.in, "axis ", a.name, ": output_padding = s overshoots");
    }

    // What "transposed" means: the layer is the adjoint of the forward convolution of the
    // same weight on the 6×8 input it picked, ⟨T u, v⟩ = ⟨u, C v⟩ for every u, v. (With
    // output_padding 0 it would be the adjoint of the convolution on 5×7 instead.)
    nn::ConvOptions forward_opt = options();
    forward_opt.output_padding(0);
    nn::Conv conv(kCout, kCin, forward_opt);  // [C_out, C_in, k, k] = the same [2, 3, 3, 3] tensor
    conv.weight.assign(layer.weight.value());
    Generator gen(2);
    const Tensor v = randn(result.shape(), DType::f64, gen);
    const double lhs = dot(result, v), rhs = dot(u, conv(ag::constant(v)).value());
    std::printf("   and it is the transpose of the forward convolution on %d×%d with the same weight:\n"
                "   ⟨T u, v⟩ = %.15g, ⟨u, C v⟩ = %.15g\n",
                kH.out(), kW.out(), lhs, rhs);
    claim(std::fabs(lhs - rhs) <= 1e-12 * (std::fabs(lhs) + 1), "⟨T u, v⟩ = ⟨u, C v⟩");
}

int main(int argc, char** argv) try {
    const std::filesystem::path out_dir = lesson::parse_out_dir(
        argc, argv, "transposed_conv_explained", "Lesson 2: transposed convolution explained on one configuration.");
    manual_seed(1);  // the layer's initial weight
    nn::ConvTranspose layer(kCin, kCout, options());
    Generator gen(1);
    const Tensor u = randn({1, kCin, kH.in, kW.in}, DType::f64, gen);
    const Tensor result = layer(ag::constant(u)).value();

    sizes(result);
    which_inputs_feed_which_outputs(out_dir);
    equivalent_convolution(u, layer.weight.value(), result);
    why_output_padding(layer, u, result);
    std::printf("every claim holds\n");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
}
