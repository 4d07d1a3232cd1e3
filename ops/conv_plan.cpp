#include "tapegrad/ops/conv_plan.hpp"

#include <algorithm>
#include <atomic>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/env.hpp"
#include "tapegrad/ops/conv_rows.hpp"
#include "tapegrad/ops/conv_small.hpp"

namespace tg {

namespace {

// A setting whose values are E's enumerators, spelled `names` in their order (the first
// the default), from the environment variable `var`. Read on first use, never during
// static initialisation: an invalid value is an error thrown where a convolution runs (so
// a program can catch it and report it), not a termination before main.
template <class E>
std::atomic<E>& enum_setting(const char* var, std::initializer_list<const char*> names) {
    static std::atomic<E> s{[&] {
        const std::optional<std::string> e = env::choice(var, names);
        int i = 0;
        if (e)
            for (const char* name : names) {
                if (*e == name) break;
                ++i;
            }
        return static_cast<E>(e ? i : 0);
    }()};
    return s;
}
std::atomic<TransposedAlgo>& transposed_setting() {
    return enum_setting<TransposedAlgo>("TAPEGRAD_TRANSPOSED", {"auto", "col2im", "phases"});
}
std::atomic<SmallConv>& small_setting() {
    return enum_setting<SmallConv>("TAPEGRAD_SMALL_CONV", {"auto", "never", "always", "rows"});
}

// One channel a side per group.
bool depthwise(const ConvGeometry& g) { return g.Ig == 1 && g.Og == 1; }
// A stride above 1 on some axis.
bool strided(const ConvGeometry& g) {
    return std::any_of(g.stride.begin(), g.stride.end(), [](std::int64_t s) { return s > 1; });
}
// ∏s: the result positions a tap's products are spread over.
std::int64_t stride_product(const ConvGeometry& g) {
    std::int64_t p = 1;
    for (std::int64_t s : g.stride) p *= s;
    return p;
}

// Where the direct kernels' work on positions no tap reaches (ConvGeometry::taps_reach: they
// copy or compute every i-side position, the GEMM paths touch only those the taps reach)
// loses to the GEMM paths: the forward call wherever the taps skip positions (3-D 8 -> 64,
// k1 s2: 7× the GEMM path's time; 2-D k1 s2, k3 s4, k2 s3 on 8-64 channels 1.16-2.7×, 1-D
// k1 s2 1.6×), the others where they reach at most half of them (k1 s2: the weight gradient
// 1.27-2.2×, the transposed call 1.2-1.3×). At k3 s4 and k2 s3 (3/4 and 2/3) the channel
// rows' transposed call and weight gradient kept 0.83-1.0 of the GEMM path's time on 2-D
// layers (2.0 on a 3-D one of 4³).
bool skips_too_much(ConvKind kind, const ConvGeometry& g) {
    const double reach = g.taps_reach();
    return kind == ConvKind::Forward ? reach < 1 : reach <= 0.5;
}

// The rule for the small-channel kernels: NCX, at least kSmallMinMacs multiply-adds (below
// that the call's fixed costs, grids and buffers, outweigh the work) and one image's grids
// within a core's L2. The weight gradient: Ig·∏K (the GEMM's N, which the GEMM path needs
// wide) at most kSmallR, or kSmallRStrided where a stride is above 1, and a group's weight
// (Og·Ig·∏K, the GEMM's M × N) at most kSmallGradWeights, a layer of kSmallOg o-side
// channels' at R = kSmallR: past it the GEMM path, or the channel rows, took 0.09-0.8 of the
// small-channel kernels' time on 11 of 14 layers of 48-256 o-side channels from 3-16 (256 from
// 16, k4 on 8 × 8, N 16: 7.2 -> 0.83 ms at 1 thread on a Zen 5, where the rows refuse 256
// result channels), and up to 6 912 they kept 0.6-1.0 of the others'. Forward
// and transposed: at most kSmallOg o-side and kSmallIg i-side channels per group (the
// GEMM's M and K, or K and M/∏K), and at most kSmallWaste grid positions computed per
// result (the rows' padding; 3-D grids of small planes are mostly padding).
// bench/RESULTS.md has the layers measured both ways behind the numbers.
bool small_fits(ConvKind kind, const ConvGeometry& g, std::size_t elem_bytes, TransposedAlgo algo, SmallConv mode) {
    if (g.layout != Layout::NCX || mode == SmallConv::Never || mode == SmallConv::Rows) return false;
    if (kind == ConvKind::Transposed && algo != TransposedAlgo::Auto) return false;
    if (mode == SmallConv::Always) return true;
    if (g.macs() < kSmallMinMacs) return false;
    if (skips_too_much(kind, g)) return false;
    // Disjoint taps (each result position one tap: k2 s2, k3 s3, k4 s4): the transposed call's
    // GEMM sums all there is to sum and col2im only copies; the small-channel kernels took
    // 1.15-1.79× its time on 7 such layers (3-16 o-side channels to 16-256, 1-D to 3-D).
    if (kind == ConvKind::Transposed && g.taps_disjoint()) return false;
    // At most kSmallTinyOg o-side channels from many i-side ones (a map of a few channels made
    // from, or made into, 64-256): the GEMM's forward M and transposed K are that short. The
    // small-channel kernels took 0.29-0.86 of the GEMM path's time on 13 such layers (4-8 from
    // 64-256 channels, 1-D to 3-D, images up to 128 × 128), at any image size. The weight
    // gradient too, strided or not: on 16 random strided layers (2-8 from 48-256, k3-k5 s2-s3,
    // 1-D to 3-D) 0.13-0.93 of the GEMM path's or the channel rows' time on 14 (the 3-D ones
    // 0.13-0.49), 1.05 and 1.25 on the other two (Zen 5, AVX-512, 1 thread; AVX2 0.27-0.93 but
    // where the rows' vectors are whole: plan_conv). With 16 o-side channels they lost
    // (1.01-1.55), with 64 and 3 i-side ones too (dcgan_g4's: 1.23-1.45).
    if (g.Og <= kSmallTinyOg && g.Ig > kSmallIg) return true;
    const PhaseGrid pg(g);
    // At most kSmallTinyOg o-side channels from at most kSmallIg (not depthwise): all three
    // calls, whatever the grids' padding, on images of up to kSmallTinyImageBytes of grids.
    // Where the rule below sent them to the GEMM path (grids past a core's L2, or padding past
    // kSmallWaste, or a strided weight gradient of more than kSmallRStrided columns), the
    // small-channel kernels took 0.17-0.78 of its time on 12 layers of 20 random ones (1-8
    // o-side channels from 8-32, 1-D to 3-D, images to 1.7 MB, padding to 2.4×); the GEMM path
    // kept a 3-D k3 s3 layer of 5.5 MB grids (small kernels 1.1-6.2× slower).
    if (g.Og <= kSmallTinyOg && !depthwise(g))
        return pg.image_bytes(g, static_cast<std::int64_t>(elem_bytes)) <= kSmallTinyImageBytes;
    if (pg.image_bytes(g, static_cast<std::int64_t>(elem_bytes)) > kTileCacheBytes) return false;
    if (kind == ConvKind::WeightGrad)
        return g.R() <= (strided(g) ? kSmallRStrided : kSmallR) && g.Og * g.R() <= kSmallGradWeights;
    const double computed = static_cast<double>(kind == ConvKind::Forward ? pg.PS : pg.phases * pg.PS);
    const double results = static_cast<double>(kind == ConvKind::Forward ? g.out_numel() : g.in_numel());
    return g.Og <= kSmallOg && g.Ig <= kSmallIg && computed <= kSmallWaste * results;
}

// The channel-row weight gradient's channel limits (Cr reduction channels, the i-side ones; Cd
// result channels, the o-side ones, `padded` past a quarter padding). Its register tiles
// are reduction channels × result vectors, so unlike the other two calls it needs no
// reduction channels to speak of (a tile takes several taps' of them at once, see
// rows_weight_grad), only whole vectors of result channels:
// - at least kRowsMinChannels result channels unpadded, from fewer reduction channels where
//   a pair sums at least kRowsGradMinRows rows (reduction channels times the last axis' taps,
//   which a pair takes at once at dilation 1): 16-64 from 3-8, 0.67-0.91 of the time of the
//   kernels that had them at 1 thread, 0.38-0.64 on 3-D layers; the classifier's first layer,
//   16 from 1 with 3 taps, 1.25×. With kRowsMinChannels or more: 16-48 from 16, 0.55-0.73
//   (the classifier's second layer 1.46 -> 0.92 ms). In a team, fewer reduction channels
//   split the images between threads (rows_weight_grad): 17 layers of 16-128 result channels
//   from 1-12, 1-D to 3-D, went from the small-channel kernels or the GEMM path to 0.29-0.89
//   of their time at 2 threads (a team's grid of pairs had lost there, 1.1-1.6×);
// - from kRowsGradManySums reduction channels or more, any kRowsMinChannels result channels
//   (padded too: 24 from 48, 0.65-0.75), or kRowsGradMinResult where a stride leaves the other
//   paths' weight gradients slow and the taps overlap (8-12 from 32-128, k3-k5 s2-s4:
//   0.33-0.76 at 1 and 2 threads; at stride 1 they lost 1.1-1.6×, with disjoint taps
//   1.2-2.5×).
bool rows_grad_fits(const ConvGeometry& g, std::int64_t Cr, std::int64_t Cd, bool padded) {
    if (Cr >= kRowsGradManySums)
        return Cd >= kRowsMinChannels || (Cd >= kRowsGradMinResult && strided(g) && !g.taps_disjoint());
    const std::int64_t tile_rows = rows_grad_takes_runs(g) ? Cr * g.kernel.back() : Cr;  // one pair's reduction rows
    return Cd >= kRowsMinChannels && !padded && (Cr >= kRowsMinChannels || tile_rows >= kRowsGradMinRows);
}

// Whether the channel rows' Cd result channels leave a quarter or more of their vectors empty.
bool rows_padded(std::int64_t Cd, std::size_t elem_bytes) { return 4 * Cd <= 3 * rows_padded_channels(Cd, elem_bytes); }
// Bytes of one tap's weight block of the channel rows: Cr reduction channels × Cd result
// channels padded to whole vectors.
std::int64_t rows_tap_bytes(std::int64_t Cr, std::int64_t Cd, std::size_t elem_bytes) {
    return Cr * rows_padded_channels(Cd, elem_bytes) * static_cast<std::int64_t>(elem_bytes);
}

// Where both direct kernels fit a weight gradient, the channel rows' (0.44-0.86 of the
// small-channel kernels' time at 1 and 2 threads; the classifier's second layer 1.46 -> 0.92
// ms at 1 thread, 0.85 -> 0.69 at 2), but not in a team of sleeping threads: there each of
// the rows' barriers, two a chunk of images, is a wake-up (that layer 0.92 -> 1.09 ms at 2
// threads with OMP_WAIT_POLICY=passive), and the small-channel kernels have none. Where the
// rows split the images instead (fewer than kRowsMinChannels reduction channels, two images or
// more: rows_weight_grad), they fork once and have no barrier either, so they come first for
// sleeping teams too (dcgan_g4 at 2 threads: RESULTS). Not for kSmallTinyOg result channels
// in half-empty vectors (8 at AVX-512): 5 strided layers of 8 from 48-128 took 0.42-1.05 of
// the rows' time on the small-channel kernels (Zen 5, 1 thread; at AVX2, whose vectors the 8
// fill, 0.78-1.45).
bool rows_grad_first(ConvKind kind, const ConvGeometry& g, std::size_t elem_bytes, int team) {
    const bool no_barriers = team <= 1 || rows_grad_image_parts(g) > 1;
    return kind == ConvKind::WeightGrad && (no_barriers || !team_threads_sleep()) &&
           !(g.Og <= kSmallTinyOg && rows_padded(g.Og, elem_bytes));
}

// The rule for the channel-row kernels: NCX and NXC calls with at least kRowsMinChannels
// channels per group a side, result channels padded to whole vectors of the active
// instruction set, at most a quarter of them padding (the weight gradient, whose result
// channels are the forward call's: rows_grad_fits instead); one tap's weight block
// (reduction channels × padded result channels) within kRowsTapBytes, an L1's share (larger blocks stream from L2 for every register tile);
// and at most kRowsMaxResult result channels (more and the GEMM's blocking wins), or
// kRowsMaxGradResult where the GEMM's reduction is short beside its traffic:
// - the weight gradient always (0.67-0.90 of the GEMM path's time on every layer measured);
// - the transposed call (its GEMM sums over the o-side channels only) where a result position
//   takes kRowsTransposedTaps taps or more on average (∏K/∏s: k3 s1, k3 s2, k4 s2, 1-D k8 s4;
//   0.23-0.96 with 96-128 result channels) and either sums kRowsTransposedSums products or
//   more (Og·∏K/∏s) or writes a result of at most kRowsTransposedBytes (32 -> 96-128, k3 s2
//   on 32 × 32 images, 72 products: 0.76-0.90 with 2-5 images, 4-8 MB, 1.16-1.57 with 8,
//   13-17 MB, where the rows' transposes into so many planes fall out of cache), or the input
//   image has fewer than kRowsSmallImage positions (k4 s3 on 4 × 4 images 0.48-0.54, on
//   16 × 16 and 32 × 32 ones 1.04-1.24);
// - the forward call on 2-D and 3-D layers with a tap block under kRowsTapBytes (0.59-0.97;
//   1-D layers lost, 1.13-1.22, and 128 × 64 blocks at AVX2, 1.04-1.18); with fewer than
//   kRowsMinChannels reduction channels only on 3-D layers with taps in padding (the rule
//   for those below): on 9 such layers (3-12 reduction channels, 32-128 result channels,
//   k3-k5 s2-s3 on 4³-12³ grids) 0.34-0.83 of the GEMM path's time at 1 thread, 0.43-0.84 at
//   2, 0.42-0.72 at AVX2; a 3-D layer without padding lost 1.08-1.83, 2-D layers 1.01-1.24
//   (one won, 0.80).
// Not the NCX transposed call of a 2-D f32 layer without padding summing kRowsLongSums
// products a result or more, at AVX-512 (the rule at its place below).
// Disjoint taps at a last-axis stride of at most 2 on images of kRowsSmallImage positions or
// more (k2 s2): the transposed call never (the GEMM path's col2im is one copy or interleave
// there: it won 1.1-2.4×; at stride 3 its scatter is element by element), the forward call
// not past kRowsMaxResult (k2 s2 lost 1.05-1.31). Measured in bench/RESULTS.md.
bool rows_fits(ConvKind kind, const ConvGeometry& g, std::size_t elem_bytes, TransposedAlgo algo, SmallConv mode,
               int team, simd::Isa isa) {
    if (depthwise(g)) return false;
    if (kind == ConvKind::Transposed && algo != TransposedAlgo::Auto) return false;
    if (mode == SmallConv::Rows) return true;
    if (mode != SmallConv::Auto) return false;
    if (skips_too_much(kind, g)) return false;
    const bool tr = kind == ConvKind::Transposed;
    const bool small_image = g.out_numel() < kRowsSmallImage;
    const bool disjoint = g.taps_disjoint() && g.stride.back() <= 2 && !small_image;
    if (tr && disjoint) return false;
    const std::int64_t Cr = tr ? g.Og : g.Ig, Cd = tr ? g.Ig : g.Og;
    const std::int64_t strides = stride_product(g);
    const std::int64_t tap_bytes = rows_tap_bytes(Cr, Cd, elem_bytes);
    const std::int64_t result_bytes = g.N * g.G * g.Ig * g.in_numel() * static_cast<std::int64_t>(elem_bytes);
    const bool many_taps = g.kernel_numel() >= kRowsTransposedTaps * strides &&
                           (g.Og * g.kernel_numel() >= kRowsTransposedSums * strides || result_bytes <= kRowsTransposedBytes);
    const bool wide = kind == ConvKind::WeightGrad ||
                      (tr ? many_taps || small_image : g.D() >= 2 && !disjoint && tap_bytes < kRowsTapBytes);
    const std::int64_t max_result = wide ? kRowsMaxGradResult : kRowsMaxResult;
    const bool padded = rows_padded(Cd, elem_bytes);
    // 3-D layers whose taps land partly in padding (taps_in_bounds below 1), at any channel
    // counts and tap block: the GEMM path multiplies the padding's zeros and gathers (or
    // col2im adds) runs of a few elements of small grids; the channel rows skip both. The
    // forward call with any reduction channels; the weight gradient with kRowsMinChannels or
    // more, in a team up to kRowsMaxGradResult result channels; the transposed call with more
    // than kSmallTinyOg reduction channels where a result sums at most kRowsLongSums
    // products (Og·∏K/∏s), in a team with an image per thread. Measured on 13 random 3-D
    // layers (4³-12³ grids, 8-256 channels a side, k3-k5 s1-s3; Zen 5, bench/RESULTS.md): the
    // forward call 0.40-0.77 of the GEMM path's time at 1 thread, 0.38-0.97 at 2, 0.57-0.92 at
    // AVX2 but one (k5, 192 from 128) 1.12; the weight gradient 0.42-0.96 at 1 thread,
    // 0.50-0.90 at AVX2, at 2 threads 0.51-0.96 up to 128 result channels and 1.07-1.22 on 3
    // of 5 layers past; the transposed call 0.54-0.88 where a result sums 216-750 products (2
    // threads: 0.56-0.89, but 1.84-1.90 on one image of 4³), 1.02-1.56 at 3 000-6 000. Without
    // padding (taps_in_bounds 1) the GEMM path kept its lead (the rows up to 1.35×).
    if (g.D() == 3 && g.taps_in_bounds() < 1 && Cd >= kRowsMinChannels && !padded) {
        if (kind == ConvKind::Forward) return true;
        if (kind == ConvKind::WeightGrad && Cr >= kRowsMinChannels && (team <= 1 || Cd <= kRowsMaxGradResult)) return true;
        if (tr && Cr > kSmallTinyOg && g.Og * g.kernel_numel() <= kRowsLongSums * strides && g.N >= team) return true;
    }
    // The transposed call of a few reduction channels (more than kSmallTinyOg, at most
    // kRowsMinChannels) to any number of result channels, taps overlapping: the GEMM path's
    // product has a reduction of those few channels and writes a column buffer ∏K times the
    // result, and col2im adds it up again. On 15 such layers (9-16 o-side channels to 48-256,
    // k2-k5 s1-s2, 1-D to 3-D, results to 52 MB) the rows took 0.20-0.96 of its time (geomean
    // 0.50; Zen 5, AVX-512, 1 thread); with disjoint taps they lost on 1-D and large 2-D layers
    // (1.1-1.4), and on a 1-D layer at stride 1 (9 -> 64, k3 on 256 positions) 1.3.
    if (tr && Cr > kSmallTinyOg && Cr <= kRowsMinChannels && !g.taps_disjoint() && (g.D() > 1 || strided(g)) &&
        Cd >= kRowsMinChannels && !padded && tap_bytes <= kRowsTapBytes)
        return true;
    if (Cd > max_result || tap_bytes > kRowsTapBytes) return false;
    if (kind == ConvKind::WeightGrad) return rows_grad_fits(g, Cr, Cd, padded);
    if (Cd < kRowsMinChannels || padded) return false;
    // The NCX transposed call of a 2-D f32 layer without padding whose results sum
    // kRowsLongSums products (Og·∏K/∏s) or more, at AVX-512: the GEMM path, whose 12 × 32
    // register tile runs long sums closer to the FMA peak than the channel rows do and has no
    // padding's products here to waste. On 18 2-D layers without padding (16-64 channels a
    // group each side, k3-k5 s1-s2; Intel Xeon family 6 model 207, bench/RESULTS.md) the GEMM
    // path took 0.80-0.93 of the rows' time at 1 thread (0.57-1.00 at 2) on the five whose
    // results sum 1 024-1 600 products, 0.93-1.30 on the 13 that sum 128-800; at AVX2 (a 6 × 16
    // tile) 1.03-1.11 on those five, and in NXC 1.12-1.43: both keep the rows. Zen 5's AVX-512
    // measured the same way (0.78-0.86 at 800-1 536 products, 1.13 at 288).
    if (tr && isa == simd::Isa::avx512 && elem_bytes == 4 && g.layout == Layout::NCX && g.D() == 2 &&
        g.taps_in_bounds() >= 1 && g.Og * g.kernel_numel() >= kRowsLongSums * strides)
        return false;
    return Cr >= kRowsMinChannels;
}

// The 3-D transposed call where the small-channel kernels fit, on the channel rows instead
// where it has kRowsOverSmall result channels (i-side) or more, or kRowsMinChannels summing
// kRowsTransposedSums products a result (Og·∏K/∏s), whatever its reduction channels. The
// small-channel kernels compute every tap of every result position, the zeros of u's grid
// included (3-D k5 on 8³ -> 12³: 70% of the products), and on a few o-side channels a register
// tile stores its sums after a handful of products; the rows skip the taps that land outside u.
// On 3-D layers the small-channel kernels had (Zen 5, AVX-512, 1 thread): 32-256 result
// channels from 2-16, k3-k5 s1-s3, 0.32-0.80 of their time (10 layers); 16 from 16 at k5 s1
// 0.59; 16 with fewer products (16-125) 0.83-1.49 (5 layers), 8 result channels 1.49. On 2-D
// layers the rows were 0.52-1.17 of their time (20 layers), 1-D 0.99-3.1: not there.
bool rows_over_small(ConvKind kind, const ConvGeometry& g, std::size_t elem_bytes, TransposedAlgo algo, SmallConv mode) {
    if (kind != ConvKind::Transposed || mode != SmallConv::Auto || algo != TransposedAlgo::Auto || g.D() != 3) return false;
    if (g.Ig < kRowsMinChannels || rows_padded(g.Ig, elem_bytes) || skips_too_much(kind, g)) return false;
    if (rows_tap_bytes(g.Og, g.Ig, elem_bytes) > kRowsTapBytes) return false;
    return g.Ig >= kRowsOverSmall || g.Og * g.kernel_numel() >= kRowsTransposedSums * stride_product(g);
}

// Columns per tile: buffers of about a core's L2 per thread (tiles do not grow with N, so
// neither does the time per image), at least `min_cols` (the GEMM packs its A again for
// every tile), and `nbuf` threads' buffers never past the budget.
std::int64_t tile_cols(std::int64_t bytes_per_col, int nbuf, std::int64_t min_cols, std::int64_t budget) {
    const std::int64_t per_col = std::max<std::int64_t>(1, bytes_per_col);
    const std::int64_t cache_cols = std::max(min_cols, kTileCacheBytes / per_col);
    return std::max<std::int64_t>(1, std::min(cache_cols, budget / (per_col * nbuf)));
}

// Whole images per tile where an image fits (as few tiles as the size allows, all of about
// one size), else chunks of one image's positions of about one size. `multiple`: the tile
// count is made a multiple of it where the batch allows (so that a team takes whole tiles).
std::vector<ColTile> make_tiles(std::int64_t N, std::int64_t P, std::int64_t cols, std::int64_t multiple) {
    std::vector<ColTile> tiles;
    if (P <= cols) {
        std::int64_t count = (N + cols / P - 1) / (cols / P);
        count = std::min(N, (count + multiple - 1) / multiple * multiple);
        for (std::int64_t t = 0; t < count; ++t) {
            const std::int64_t n0 = N * t / count, n1 = N * (t + 1) / count;
            tiles.push_back({n0, n1 - n0, 0, P});
        }
    } else {
        std::int64_t count = (P + cols - 1) / cols;
        while ((N * count) % multiple != 0 && count < P) ++count;
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t t = 0; t < count; ++t) tiles.push_back({n, 1, P * t / count, P * (t + 1) / count});
    }
    return tiles;
}

}  // namespace

void set_transposed_algo(TransposedAlgo algo) { transposed_setting() = algo; }
TransposedAlgo transposed_algo() { return transposed_setting(); }
void set_small_conv(SmallConv mode) { small_setting() = mode; }
SmallConv small_conv() { return small_setting(); }

const char* strategy_name(ConvStrategy s) {
    switch (s) {
        case ConvStrategy::Depthwise: return "depthwise";
        case ConvStrategy::Small: return "small";
        case ConvStrategy::Rows: return "rows";
        case ConvStrategy::Phases: return "phases";
        case ConvStrategy::Serial: return "serial";
        case ConvStrategy::Units: return "units";
        case ConvStrategy::Groups: return "groups";
        case ConvStrategy::Partials: return "partials";
        case ConvStrategy::Images: return "images";
        case ConvStrategy::Channels: return "channels";
        case ConvStrategy::Team: return "team";
    }
    return "?";
}

std::int64_t ConvPlan::col_part(const ConvGeometry& g, std::int64_t rows) const {
    std::int64_t n = 0;
    for (const ColTile& t : tiles)
        n = std::max(n, (row_blocks ? gemm_block_rows(rows, g.kernel_numel(), t.cols(), elem_bytes) : rows) * t.cols());
    return n;
}

std::int64_t ConvPlan::channel_col_offset(const ConvGeometry& g, int id, int team) const {
    std::int64_t at = 0;
    for (int j = 0; j < id; ++j) at += col_part(g, (team_part(g.Ig, j + 1, team) - team_part(g.Ig, j, team)) * g.kernel_numel());
    return at;
}

std::int64_t ConvPlan::scratch_elems() const {
    return col_copies() * col_elems + buffers * stage_elems + partial_elems;
}

ConvPlan plan_conv(ConvKind kind, const ConvGeometry& g, int team, std::int64_t budget, std::size_t elem_bytes,
                   TransposedAlgo algo, SmallConv small, simd::Isa isa) {
    ConvPlan p;
    p.kind = kind;
    const bool nxc = g.layout == Layout::NXC;
    // The direct kernels first. Where both fit, the small-channel ones unless both sides have
    // kRowsOverSmall channels or more (with fewer, rows of 16 channels leave the channel-row
    // tiles short of sums or their rows of taps short: bench/RESULTS.md). The small-channel
    // kernels are also 2.2-2.4× the depthwise kernels' speed on NCX depthwise layers of some
    // size; the depthwise kernels keep NXC and the smallest.
    const bool small_fit = small_fits(kind, g, elem_bytes, algo, small);
    const bool over_small = small_fit && rows_over_small(kind, g, elem_bytes, algo, small);
    const bool rows = over_small || rows_fits(kind, g, elem_bytes, algo, small, team, isa);
    const bool rows_first =
        over_small || (rows && (rows_grad_first(kind, g, elem_bytes, team) || std::min(g.Ig, g.Og) >= kRowsOverSmall));
    if (small_fit && !rows_first) {
        p.strategy = ConvStrategy::Small;
        p.team = std::max(1, team);
        p.writes_all = kind != ConvKind::WeightGrad;
        return p;
    }
    if (rows) {
        p.strategy = ConvStrategy::Rows;
        p.team = std::max(1, team);
        p.writes_all = kind != ConvKind::WeightGrad;
        return p;
    }
    if (depthwise(g)) {  // no GEMM worth the name
        p.strategy = ConvStrategy::Depthwise;
        p.writes_all = kind == ConvKind::Transposed && !nxc;
        return p;
    }
    if (kind == ConvKind::Transposed && !nxc && algo == TransposedAlgo::Phases) {
        p.strategy = ConvStrategy::Phases;
        p.writes_all = true;
        return p;
    }
    const int nt = std::max(1, team);
    const std::int64_t P = g.out_numel(), R = g.R(), Og = g.Og, G = g.G, eb = static_cast<std::int64_t>(elem_bytes);
    const bool uses_col = nxc || kind == ConvKind::Transposed;  // NCX im2col feeds the GEMM's packing directly
    const std::int64_t bytes_per_col = eb * ((uses_col ? R : 0) + (nxc ? 0 : Og));
    // The weight is packed once per call where it is the GEMM's A (NCX forward and
    // transposed), so tiles there need only a few micro-tiles' columns.
    const std::int64_t min_cols = !nxc && kind != ConvKind::WeightGrad ? kMinPackedTileCols : kMinTileCols;
    const bool independent = kind == ConvKind::Forward ||
                             (kind == ConvKind::Transposed && P <= tile_cols(bytes_per_col, nt, min_cols, budget));
    const bool by_group = nt > 1 && G >= nt;
    const bool by_images = nt > 1 && kind == ConvKind::Transposed && !independent && g.N >= nt;
    // A weight that does not fit beside a tile in a core's L2 is streamed again for every
    // tile; split by channels, each thread streams only its rows of it.
    const bool big_weight = R * Og * eb > kTileCacheBytes / 2;
    const bool by_channels = nt > 1 && kind == ConvKind::Transposed && (!independent || big_weight) && !by_images && !nxc &&
                             !by_group && g.Ig >= nt;
    const bool own_buffers = nt > 1 && (independent || by_group || by_images || kind == ConvKind::WeightGrad);
    const int nbuf = own_buffers ? nt : 1;
    std::int64_t cols = tile_cols(bytes_per_col, nbuf, min_cols, budget);
    // NCX forward and transposed: an image of kWideImageCols positions or more is a tile of its
    // own, whose o-side the GEMM writes or reads in place (a tile of several images goes
    // through a staging copy). Not the weight gradient: more tiles, more partial sums.
    const bool image_tiles = !nxc && kind != ConvKind::WeightGrad && P >= kWideImageCols;
    if (image_tiles) cols = std::min(cols, P);
    p.tiles = make_tiles(g.N, P, cols, independent ? nt : 1);
    const std::int64_t ntiles = static_cast<std::int64_t>(p.tiles.size()), wsize = G * Og * R;
    const bool by_partials = kind == ConvKind::WeightGrad && ntiles >= 2 && ntiles * wsize * eb <= budget / 4;
    const bool by_units = nt > 1 && independent && ntiles * G >= nt && !by_channels;

    if (by_partials) p.strategy = ConvStrategy::Partials;
    else if (nt == 1) p.strategy = ConvStrategy::Serial;
    else if (by_images) p.strategy = ConvStrategy::Images;
    else if (by_channels) p.strategy = ConvStrategy::Channels;
    else if (by_units) p.strategy = ConvStrategy::Units;
    else if (by_group) p.strategy = ConvStrategy::Groups;
    else p.strategy = ConvStrategy::Team;
    p.team = nt;

    // NCX transposed, wherever a step runs on one thread (all but Team): the GEMM makes col
    // a block of rows at a time and col2im adds each block in while it is in cache
    // (gemm_row_blocks), so where the GEMM blocks, a column costs only its staged u and u's
    // packing, counted at half the tile's bytes (one tile of dcgan_g1's 256 columns was 8%
    // slower than two of 128): wider tiles, each streaming the packed weight once
    // (cyclegan_up_op1 21.9 -> 18.8 ms at 1 thread, 10.6 -> 9.2 at 2).
    const std::int64_t Kn = g.kernel_numel();
    const bool row_blocks = kind == ConvKind::Transposed && !nxc && p.strategy != ConvStrategy::Team;
    if (row_blocks) {
        std::int64_t wide = tile_cols(eb * 4 * Og, nbuf, min_cols, budget);
        // Images: threads take whole images, so a tile holds one (r4 of bench/random_shapes.py
        // 20261129, 3-D 32 -> 128 on 6³, N 8: the wide tile of all 8 images left one thread
        // the whole call, 4.9 ms at 1 and at 2 threads).
        if (image_tiles || p.strategy == ConvStrategy::Images) wide = std::min(wide, P);
        if (wide > cols && gemm_block_rows(R, Kn, std::min(wide, g.N * P), elem_bytes) < R) {
            std::vector<ColTile> w = make_tiles(g.N, P, wide, independent ? nt : 1);
            if (p.strategy != ConvStrategy::Units || static_cast<std::int64_t>(w.size()) * G >= nt) p.tiles = std::move(w);
        }
    }
    p.row_blocks = row_blocks;
    p.elem_bytes = elem_bytes;
    std::int64_t max_cols = 0, max_nb = 0;
    for (const ColTile& t : p.tiles) {
        max_cols = std::max(max_cols, t.cols());
        max_nb = std::max(max_nb, t.nb);
    }
    // Channels: one column buffer split by rows, each thread's part for its channels' rows,
    // and a staging buffer per thread. Team: the team shares one of each (the tiles stay those
    // sized for nbuf copies).
    p.buffers = p.strategy == ConvStrategy::Channels ? nt : p.strategy == ConvStrategy::Team ? 1 : nbuf;
    const std::int64_t col_elems = p.strategy == ConvStrategy::Channels ? p.channel_col_offset(g, nt, nt) : p.col_part(g, R);
    p.col_elems = uses_col ? col_elems : 0;
    p.stage_elems = nxc || max_nb == 1 ? 0 : Og * max_cols;
    p.partial_elems = by_partials ? ntiles * wsize : 0;
    p.pack_weight = !nxc && kind != ConvKind::WeightGrad && p.strategy != ConvStrategy::Channels;
    p.k_major = nxc;
    // NCX transposed: col2im writes the planes of a tile of whole images, and every position
    // that disjoint taps reach (see col2im): all of them where the taps cover the result.
    p.writes_all = kind == ConvKind::Forward ||
                   (kind == ConvKind::Transposed && !nxc &&
                    (g.taps_cover() || std::all_of(p.tiles.begin(), p.tiles.end(),
                                                   [P](const ColTile& t) { return t.p0 == 0 && t.p1 == P; })));
    return p;
}

}  // namespace tg
