// The conv plans (tapegrad/ops/conv_plan.hpp), checked without running a kernel: two plans
// worked out by hand from the rules in the header, and the invariants every plan keeps on
// the whole conv table at 1, 2 and 3 threads and several budgets (tiles cover every column
// once, in order; scratch within the budget; each strategy only where its rule allows).
#include <catch2/catch.hpp>

#include <set>

#include "conv_table.hpp"
#include "isas.hpp"
#include "tapegrad/core/simd.hpp"
#include "tapegrad/core/blas.hpp"
#include "tapegrad/ops/conv_plan.hpp"
#include "tapegrad/ops/conv_rows.hpp"
#include "tapegrad/ops/conv_small.hpp"

using namespace tg;
using namespace tg::testing;

namespace {

constexpr std::int64_t kDefaultBudget = std::int64_t{64} << 20;

ConvGeometry conv2d(std::int64_t N, std::int64_t C_in, std::int64_t C_out, std::int64_t X, std::int64_t K,
                    std::int64_t groups = 1, Layout layout = Layout::NCX) {
    return ConvGeometry::forward({.N = N, .C_in = C_in, .C_out = C_out, .groups = groups, .in_size = {X, X},
                                  .kernel = {K, K}, .pads_begin = {K / 2, K / 2}, .pads_end = {K / 2, K / 2},
                                  .layout = layout});
}

// Every column of the batch (image n, position q) in exactly one tile, tiles in order.
void check_tiles_cover(const ConvPlan& p, const ConvGeometry& g, const std::string& what) {
    INFO(what);
    const std::int64_t P = g.out_numel();
    std::int64_t n = 0, q = 0;
    for (const ColTile& t : p.tiles) {
        REQUIRE(t.nb >= 1);
        REQUIRE(t.p0 < t.p1);
        if (t.nb > 1) REQUIRE((t.p0 == 0 && t.p1 == P));  // several images: whole ones
        REQUIRE(t.n0 == n);
        REQUIRE(t.p0 == q);
        if (t.p1 == P) {
            n += t.nb;
            q = 0;
        } else {
            q = t.p1;
        }
    }
    CHECK(n == g.N);
    CHECK(q == 0);
}

}  // namespace

TEST_CASE("conv plan: a forward layer worked out by hand", "[conv_plan]") {
    // NCX, N = 4, 3 -> 8 channels, 15x15, 3x3 pad 1: P = 225, R = 27, Og = 8, f32.
    // im2col feeds the GEMM's packing, so a column costs only its staged output: 8 · 4 =
    // 32 bytes; a tile may take 1 MiB / 32 = 32768 columns = 145 images, so one tile would
    // do, made a multiple of the team: 2 tiles of 2 images, one unit per thread.
    const ConvGeometry g = conv2d(4, 3, 8, 15, 3);
    const ConvPlan p = plan_conv(ConvKind::Forward, g, 2, kDefaultBudget, 4, TransposedAlgo::Auto, SmallConv::Never);
    CHECK(p.strategy == ConvStrategy::Units);
    CHECK(p.team == 2);
    REQUIRE(p.tiles.size() == 2);
    CHECK((p.tiles[0].n0 == 0 && p.tiles[0].nb == 2 && p.tiles[0].p0 == 0 && p.tiles[0].p1 == 225));
    CHECK((p.tiles[1].n0 == 2 && p.tiles[1].nb == 2));
    CHECK(p.buffers == 2);
    CHECK(p.col_elems == 0);
    CHECK(p.stage_elems == 8 * 450);
    CHECK(p.pack_weight);
    CHECK(p.writes_all);
    CHECK(p.scratch_elems() == 2 * 8 * 450);

    // The same layer on one thread: one tile of all four images.
    const ConvPlan p1 = plan_conv(ConvKind::Forward, g, 1, kDefaultBudget, 4, TransposedAlgo::Auto, SmallConv::Never);
    CHECK(p1.strategy == ConvStrategy::Serial);
    REQUIRE(p1.tiles.size() == 1);
    CHECK(p1.tiles[0].nb == 4);

    // 32x32 images (P = 1024 >= kWideImageCols = 256): a tile each, whose output plane the
    // GEMM writes in place, so nothing is staged; the weight gradient keeps one tile.
    const ConvGeometry w = conv2d(4, 3, 8, 32, 3);
    for (int team : {1, 2}) {
        const ConvPlan q = plan_conv(ConvKind::Forward, w, team, kDefaultBudget, 4, TransposedAlgo::Auto, SmallConv::Never);
        INFO("team " << team);
        REQUIRE(q.tiles.size() == 4);
        for (std::int64_t n = 0; n < 4; ++n)
            CHECK((q.tiles[n].n0 == n && q.tiles[n].nb == 1 && q.tiles[n].p0 == 0 && q.tiles[n].p1 == 1024));
        CHECK(q.stage_elems == 0);
        CHECK(q.scratch_elems() == 0);
        const ConvPlan t = plan_conv(ConvKind::Transposed, w, team, kDefaultBudget, 4, TransposedAlgo::Auto, SmallConv::Never);
        CHECK(t.tiles.size() == 4);
        CHECK(t.stage_elems == 0);
    }
    const ConvPlan wg = plan_conv(ConvKind::WeightGrad, w, 1, kDefaultBudget, 4, TransposedAlgo::Auto, SmallConv::Never);
    REQUIRE(wg.tiles.size() == 1);
    CHECK(wg.tiles[0].nb == 4);
}

TEST_CASE("conv plan: a transposed layer of one large image worked out by hand", "[conv_plan]") {
    // The transposed kernel of a 64 -> 64 channel 3x3 layer on one 64x64 image, f32. (The
    // GEMM path: the channel-row kernels would take this layer.)
    // On OpenBLAS (no AVX2), which makes col whole: a column holds R = 576 rows of col and 64
    // of staging, 2560 bytes, so a tile takes 1 MiB / 2560 = 409 columns, fewer than the
    // image's 4096 positions: chunks of one image, 4096 / 409 -> 11 chunks of 372 or 373
    // positions; nothing is staged (one image a tile). At 2 threads, with one image, the team
    // splits the i-side channels (32 each) and col by rows.
    // On tapegrad's own GEMM, col is made a block of rows at a time (gemm_row_blocks), so a
    // column costs only its staged u and u's packing, counted at half the tile's bytes: 4 ·
    // 64 · 4 = 1024 bytes, 1024 columns, 4 tiles of 1024 positions. col holds one block a
    // thread: whole channels (9 rows) and whole micro-panels (MR = 12 at AVX-512, 6 at AVX2)
    // under 128 KiB / (4 · 1024) = 32 rows, at least lcm(9, MR) = 36 at AVX-512, 18 at AVX2.
    const ConvGeometry g = conv2d(1, 64, 64, 64, 3);
    const IsaGuard restore;
    for (simd::Isa isa : tested_isas()) {
        simd::force(isa);
        INFO(simd::isa_name(isa));
        const bool blocks = isa != simd::Isa::scalar;
        const std::int64_t ntiles = blocks ? 4 : 11, rows = isa == simd::Isa::avx512 ? 36 : 18;
        for (int team : {1, 2}) {
            INFO(team << " threads");
            const ConvPlan p = plan_conv(ConvKind::Transposed, g, team, kDefaultBudget, 4, TransposedAlgo::Auto, SmallConv::Never);
            CHECK(p.strategy == (team == 1 ? ConvStrategy::Serial : ConvStrategy::Channels));
            CHECK(p.row_blocks);
            REQUIRE(p.tiles.size() == static_cast<std::size_t>(ntiles));
            for (std::int64_t t = 0; t < ntiles; ++t) {
                CHECK(p.tiles[static_cast<std::size_t>(t)].p0 == 4096 * t / ntiles);
                CHECK(p.tiles[static_cast<std::size_t>(t)].p1 == 4096 * (t + 1) / ntiles);
            }
            CHECK(p.col_elems == (blocks ? team * rows * 1024 : 576 * 373));
            CHECK(p.stage_elems == 0);
            CHECK(p.pack_weight == (team == 1));  // Channels: each thread packs its own channels' rows
            CHECK_FALSE(p.writes_all);            // col2im adds into a zeroed result
            CHECK(p.scratch_elems() == p.col_elems);
        }
    }

    // With two images the team takes whole images instead.
    const ConvPlan p2 = plan_conv(ConvKind::Transposed, conv2d(2, 64, 64, 64, 3), 2, kDefaultBudget, 4, TransposedAlgo::Auto,
                                  SmallConv::Never);
    CHECK(p2.strategy == ConvStrategy::Images);
    CHECK(p2.buffers == 2);

    // Images: threads take whole images, so a tile holds one even where the row blocks widen
    // the tiles (this layer's 8 images of 216 positions in one wide tile left one thread the
    // whole call): 8 tiles of one image each (16 half images on OpenBLAS, no row blocks).
    const ConvGeometry v = ConvGeometry::transposed({.N = 8, .C_in = 32, .C_out = 128, .in_size = {6, 6, 6},
                                                     .kernel = {3, 3, 3}, .stride = {3, 3, 3}, .pads_begin = {2, 2, 2},
                                                     .pads_end = {2, 2, 2}});
    for (simd::Isa isa : tested_isas()) {
        simd::force(isa);
        INFO(simd::isa_name(isa));
        const ConvPlan pv = plan_conv(ConvKind::Transposed, v, 2, kDefaultBudget, 4, TransposedAlgo::Auto, SmallConv::Never);
        CHECK(pv.strategy == ConvStrategy::Images);
        CHECK(pv.tiles.size() == (isa == simd::Isa::scalar ? 16u : 8u));
        for (const ColTile& t : pv.tiles) CHECK(t.nb == 1);
        check_tiles_cover(pv, v, simd::isa_name(isa));
    }
}

TEST_CASE("conv plan: the direct strategies", "[conv_plan]") {
    const ConvGeometry dw = conv2d(2, 8, 8, 10, 3, 8);
    for (ConvKind k : {ConvKind::Forward, ConvKind::Transposed, ConvKind::WeightGrad}) {
        const ConvPlan p = plan_conv(k, dw, 2, kDefaultBudget, 4, TransposedAlgo::Auto);
        CHECK(p.strategy == ConvStrategy::Depthwise);
        CHECK(p.tiles.empty());
        CHECK(p.writes_all == (k == ConvKind::Transposed));
    }
    CHECK_FALSE(plan_conv(ConvKind::Transposed, conv2d(2, 8, 8, 10, 3, 8, Layout::NXC), 2, kDefaultBudget, 4,
                          TransposedAlgo::Auto)
                    .writes_all);
    const ConvGeometry g = conv2d(8, 4, 6, 10, 3);
    CHECK(plan_conv(ConvKind::Transposed, g, 2, kDefaultBudget, 4, TransposedAlgo::Phases).strategy == ConvStrategy::Phases);
    CHECK(plan_conv(ConvKind::Forward, g, 2, kDefaultBudget, 4, TransposedAlgo::Phases).strategy == ConvStrategy::Small);
    CHECK(plan_conv(ConvKind::Transposed, g, 2, kDefaultBudget, 4, TransposedAlgo::Col2im).strategy != ConvStrategy::Phases);
    // The phase form is NCX only, and only for the transposed kernel.
    CHECK(plan_conv(ConvKind::Transposed, conv2d(2, 4, 6, 10, 3, 1, Layout::NXC), 2, kDefaultBudget, 4,
                    TransposedAlgo::Phases)
              .strategy != ConvStrategy::Phases);
    CHECK(plan_conv(ConvKind::Forward, g, 2, kDefaultBudget, 4, TransposedAlgo::Phases, SmallConv::Never).strategy !=
          ConvStrategy::Phases);
}

TEST_CASE("conv plan: the small-channel rule", "[conv_plan]") {
    const std::vector<ConvKind> kinds = {ConvKind::Forward, ConvKind::Transposed, ConvKind::WeightGrad};
    auto plan = [](ConvKind k, const ConvGeometry& g, SmallConv m = SmallConv::Auto,
                   TransposedAlgo a = TransposedAlgo::Auto) { return plan_conv(k, g, 2, kDefaultBudget, 4, a, m); };
    // The classifier example's layers (1 -> 16 and 16 -> 32 channels, 3x3 pad 1, 28x28 and
    // 14x14, 64 images): both everywhere (their weight gradients' GEMMs are 9 and 144
    // columns wide, within kSmallR at stride 1).
    const ConvGeometry c1 = conv2d(64, 1, 16, 28, 3), c2 = conv2d(64, 16, 32, 14, 3);
    for (ConvKind k : kinds) {
        const ConvPlan p = plan(k, c1);
        CHECK(p.strategy == ConvStrategy::Small);
        CHECK(p.team == 2);
        CHECK(p.tiles.empty());
        CHECK(p.writes_all == (k != ConvKind::WeightGrad));
        CHECK(p.scratch_elems() == 0);
    }
    CHECK(plan(ConvKind::Forward, c2).strategy == ConvStrategy::Small);
    CHECK(plan(ConvKind::Transposed, c2).strategy == ConvStrategy::Small);
    // Both fit the weight gradient: the channel rows', but not for a team of sleeping threads.
    CHECK(plan(ConvKind::WeightGrad, c2).strategy == (team_threads_sleep() ? ConvStrategy::Small : ConvStrategy::Rows));
    CHECK(plan_conv(ConvKind::WeightGrad, c2, 1, kDefaultBudget, 4, TransposedAlgo::Auto).strategy == ConvStrategy::Rows);
    // Weight gradients past the limits: 32 i-side channels of 3x3 taps (R = 288), and the
    // autoencoder's second layer (16 -> 32, stride 2: R = 144 past kSmallRStrided).
    CHECK(plan(ConvKind::WeightGrad, conv2d(64, 32, 32, 14, 3)).strategy != ConvStrategy::Small);
    const ConvGeometry a2 = ConvGeometry::forward({.N = 64, .C_in = 16, .C_out = 32, .in_size = {14, 14}, .kernel = {3, 3},
                                                   .stride = {2, 2}, .pads_begin = {1, 1}, .pads_end = {1, 1}});
    CHECK(a2.R() == 144);
    CHECK(plan(ConvKind::WeightGrad, a2).strategy != ConvStrategy::Small);
    CHECK(plan(ConvKind::Forward, a2).strategy == ConvStrategy::Small);
    // A group's weight (Og·R) past kSmallGradWeights: 256 o-side channels from 16 with 4x4
    // taps (R = 256; the small-channel kernels took 9× the GEMM path's time) or from 4 with
    // 5x5 (R = 100); 8 -> 64 with 4x4 is 8 192 weights and keeps them (where the channel rows,
    // first for the weight gradient, do not take it: with fewer than 16 reduction channels
    // and two images or more they split the images, no barriers, so sleeping teams too take
    // them), 9 -> 64 is 9 216 (the channel rows).
    CHECK(plan(ConvKind::WeightGrad, conv2d(16, 16, 256, 8, 4)).strategy != ConvStrategy::Small);
    CHECK(plan(ConvKind::WeightGrad, conv2d(4, 4, 256, 16, 5)).strategy != ConvStrategy::Small);
    const ConvGeometry w8 = conv2d(8, 8, 64, 16, 4), w9 = conv2d(8, 9, 64, 16, 4);
    CHECK(w8.Og * w8.R() == kSmallGradWeights);
    CHECK(plan(ConvKind::WeightGrad, w8).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::WeightGrad, w9).strategy == ConvStrategy::Rows);
    // More channels than the rule's limits on either side: forward and transposed on the
    // GEMM paths; the weight gradients by R alone (80, 297 and 72 columns), the first where
    // the channel rows do not take it (64 result channels from 5: they do, splitting the images).
    const ConvGeometry m5 = conv2d(16, 5, 64, 32, 4), m33 = conv2d(16, 33, 32, 16, 3), o33 = conv2d(8, 8, 33, 16, 3);
    for (const ConvGeometry& g : {m5, m33, o33}) {
        CHECK(plan(ConvKind::Forward, g).strategy != ConvStrategy::Small);
        CHECK(plan(ConvKind::Transposed, g).strategy != ConvStrategy::Small);
    }
    CHECK(plan(ConvKind::WeightGrad, m5).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::WeightGrad, m33).strategy != ConvStrategy::Small);
    // (33 result channels fill AVX2's vectors to 40, within the rows' quarter: theirs there)
    const bool rows33 = 4 * 33 > 3 * rows_padded_channels(33, 4);  // (8 reduction channels: images split)
    CHECK(plan(ConvKind::WeightGrad, o33).strategy == (rows33 ? ConvStrategy::Rows : ConvStrategy::Small));
    // 32 channels on both sides (grouped_g8's groups): all three take the channel-row kernels.
    for (ConvKind k : kinds) CHECK(plan(k, conv2d(16, 32, 32, 16, 3)).strategy == ConvStrategy::Rows);
    // A 3-D layer of 8^3 positions: its grid of 10^3 is half padding, past kSmallWaste.
    const ConvGeometry v = ConvGeometry::forward({.N = 2, .C_in = 16, .C_out = 16, .in_size = {8, 8, 8},
                                                  .kernel = {3, 3, 3}, .pads_begin = {1, 1, 1}, .pads_end = {1, 1, 1}});
    CHECK(plan(ConvKind::Forward, v).strategy != ConvStrategy::Small);
    CHECK(plan(ConvKind::Transposed, v).strategy != ConvStrategy::Small);
    // A weight gradient 48 columns wide (dcgan_g4's: 3 i-side channels, 4x4 taps) is direct
    // (the channel rows', which split its 16 images: sleeping teams too; of one image, a team's
    // grid of pairs with barriers: the small-channel kernels where teams sleep); its forward
    // and transposed (64 o-side channels) are not.
    const ConvGeometry g4 = conv2d(16, 3, 64, 32, 4), g4one = conv2d(1, 3, 64, 32, 4);
    CHECK(plan(ConvKind::WeightGrad, g4).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::WeightGrad, g4one).strategy == (team_threads_sleep() ? ConvStrategy::Small : ConvStrategy::Rows));
    CHECK(plan(ConvKind::Forward, g4).strategy != ConvStrategy::Small);
    // At most kSmallTinyOg o-side channels from more than kSmallIg i-side ones: direct at any
    // image size (past a core's L2 here), strided or not; 16 o-side channels are not.
    const ConvGeometry t8 = conv2d(2, 128, 8, 64, 3), t16 = conv2d(2, 128, 16, 64, 3);
    const ConvGeometry t8s = ConvGeometry::forward({.N = 4, .C_in = 64, .C_out = 4, .in_size = {64, 64}, .kernel = {3, 3},
                                                    .stride = {2, 2}, .pads_begin = {1, 1}, .pads_end = {1, 1}});
    for (ConvKind k : kinds) {
        CHECK(plan(k, t8).strategy == ConvStrategy::Small);
        CHECK(plan(k, t16).strategy != ConvStrategy::Small);
        CHECK(plan(k, t8s).strategy == ConvStrategy::Small);
    }
    // At most kSmallTinyOg o-side channels from at most kSmallIg: all three direct where an
    // image's grids are at most kSmallTinyImageBytes, past a core's L2 too, whatever the weight
    // gradient's R (600 and 288, past kSmallR and kSmallRStrided); past it, the GEMM paths.
    auto grids = [](const ConvGeometry& g) { return PhaseGrid(g).image_bytes(g, 4); };
    const ConvGeometry f3 = conv2d(4, 24, 3, 64, 5), f4 = conv2d(2, 32, 4, 96, 3), f4big = conv2d(2, 32, 4, 128, 3);
    const ConvGeometry f4s = ConvGeometry::forward({.N = 2, .C_in = 32, .C_out = 4, .in_size = {96, 96}, .kernel = {3, 3},
                                                    .stride = {2, 2}, .pads_begin = {1, 1}, .pads_end = {1, 1}});
    CHECK(f3.R() == 600);
    CHECK(grids(f3) <= kTileCacheBytes);
    for (const ConvGeometry& g : {f4, f4s}) CHECK((grids(g) > kTileCacheBytes && grids(g) <= kSmallTinyImageBytes));
    CHECK(grids(f4big) > kSmallTinyImageBytes);
    for (ConvKind k : kinds) {
        CHECK(plan(k, f3).strategy == ConvStrategy::Small);
        CHECK(plan(k, f4).strategy == ConvStrategy::Small);
        CHECK(plan(k, f4s).strategy == ConvStrategy::Small);
        CHECK(plan(k, f4big).strategy != ConvStrategy::Small);
    }
    // Disjoint taps (k2 s2, k3 s3): the transposed call takes the GEMM path (col2im copies),
    // the forward and the weight gradient stay direct.
    for (std::int64_t k : {2, 3}) {
        const ConvGeometry d = ConvGeometry::forward({.N = 8, .C_in = 16, .C_out = 8, .in_size = {32, 32}, .kernel = {k, k},
                                                      .stride = {k, k}});
        CHECK(d.taps_disjoint());
        CHECK(plan(ConvKind::Transposed, d).strategy != ConvStrategy::Small);
        CHECK(plan(ConvKind::Forward, d).strategy == ConvStrategy::Small);
        CHECK(plan(ConvKind::WeightGrad, d).strategy == ConvStrategy::Small);
        CHECK(plan(ConvKind::Transposed, d, SmallConv::Always).strategy == ConvStrategy::Small);
    }
    // Taps that skip i-side positions: k1 s2 reaches half of them (no direct kernel for any
    // call), k3 s4 three quarters (the forward on the GEMM path; the weight gradient on the
    // channel rows, 32 channels a side), k4 s2 all.
    auto strided = [](std::int64_t C, std::int64_t k, std::int64_t s) {
        return ConvGeometry::forward({.N = 4, .C_in = C, .C_out = C, .in_size = {32, 32}, .kernel = {k, k},
                                      .stride = {s, s}});
    };
    for (ConvKind k : kinds) {
        const ConvStrategy st = plan(k, strided(24, 1, 2)).strategy;
        CHECK((st != ConvStrategy::Small && st != ConvStrategy::Rows));
        CHECK(plan(k, strided(24, 1, 2), SmallConv::Always).strategy == ConvStrategy::Small);
    }
    const ConvStrategy fwd34 = plan(ConvKind::Forward, strided(32, 3, 4)).strategy;
    CHECK((fwd34 != ConvStrategy::Small && fwd34 != ConvStrategy::Rows));
    CHECK(plan(ConvKind::WeightGrad, strided(32, 3, 4)).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Forward, strided(24, 4, 2)).strategy == ConvStrategy::Small);
    // A stride of 2^40 (hostile but valid; the rule counts residues without a table of them).
    const ConvGeometry huge = ConvGeometry::forward({.N = 2, .C_in = 24, .C_out = 24, .in_size = {64, 64},
                                                     .kernel = {3, 3}, .stride = {std::int64_t{1} << 40, 2}});
    for (ConvKind k : kinds) CHECK(plan(k, huge).strategy != ConvStrategy::Small);
    // Too little work for the grids' fixed costs (the "tiny" shape: 3600 multiply-adds).
    CHECK(plan(ConvKind::Forward, conv2d(1, 4, 4, 5, 3)).strategy != ConvStrategy::Small);
    // One image's grids past a core's L2 (16 + 32 channels of 130 x 130 floats).
    CHECK(plan(ConvKind::Forward, conv2d(2, 16, 32, 128, 3)).strategy != ConvStrategy::Small);
    for (ConvKind k : kinds) {
        CHECK(plan(k, c1, SmallConv::Never).strategy != ConvStrategy::Small);
        CHECK(plan(k, conv2d(2, 64, 64, 64, 3), SmallConv::Always).strategy == ConvStrategy::Small);
        CHECK(plan(k, conv2d(64, 1, 16, 28, 3, 1, Layout::NXC)).strategy != ConvStrategy::Small);  // NCX only
        // Depthwise: the direct small-channel kernels from 2^16 multiply-adds on (NCX), the
        // depthwise kernels below that and for NXC.
        CHECK(plan(k, conv2d(2, 8, 8, 10, 3, 8)).strategy == ConvStrategy::Depthwise);
        CHECK(plan(k, conv2d(8, 128, 128, 32, 4, 128)).strategy == ConvStrategy::Small);
        CHECK(plan(k, conv2d(8, 128, 128, 32, 4, 128, Layout::NXC)).strategy == ConvStrategy::Depthwise);
        CHECK(plan(k, conv2d(2, 8, 8, 10, 3, 8), SmallConv::Always).strategy == ConvStrategy::Small);
    }
    // A transposed algorithm asked for by name wins.
    CHECK(plan(ConvKind::Transposed, c1, SmallConv::Always, TransposedAlgo::Col2im).strategy != ConvStrategy::Small);
    CHECK(plan(ConvKind::Transposed, c1, SmallConv::Auto, TransposedAlgo::Phases).strategy == ConvStrategy::Phases);
}

// The channel-row rule (plan_conv, kRows*), worked out by hand on layers whose result
// channels are whole vectors at every instruction set (multiples of 16 floats). The weight
// gradient's result channels are the forward call's (Og).
TEST_CASE("conv plan: the channel-row rule", "[conv_plan]") {
    auto plan = [](ConvKind k, const ConvGeometry& g, SmallConv m = SmallConv::Auto, std::size_t eb = 4,
                   simd::Isa isa = simd::active()) { return plan_conv(k, g, 2, kDefaultBudget, eb, TransposedAlgo::Auto, m, isa); };
    // vol3d_k4s2 (64 -> 32 channels transposed: 32 i-side, 64 o-side), dilated_d2 (64 -> 64):
    // forward and transposed; one tap's weight block 32·64 or 64·64 floats, within 32 KiB.
    const ConvGeometry vol = ConvGeometry::forward({.N = 2, .C_in = 32, .C_out = 64, .in_size = {16, 16, 16},
                                                    .kernel = {4, 4, 4}, .stride = {2, 2, 2}, .pads_begin = {1, 1, 1},
                                                    .pads_end = {1, 1, 1}});
    for (const ConvGeometry& g : {vol, conv2d(4, 64, 64, 32, 3)}) {
        for (ConvKind k : {ConvKind::Forward, ConvKind::Transposed}) {
            const ConvPlan p = plan(k, g);
            CHECK(p.strategy == ConvStrategy::Rows);
            CHECK(p.team == 2);
            CHECK(p.writes_all);
            CHECK(p.scratch_elems() == 0);
        }
        CHECK(plan(ConvKind::WeightGrad, g).strategy == ConvStrategy::Rows);
        CHECK(plan(ConvKind::Forward, g, SmallConv::Never).strategy != ConvStrategy::Rows);
    }
    // dcgan_g3 (128 -> 64 transposed): the transposed call sums 128 channels into 64 (a block
    // of 128·64 floats, 32 KiB: in); the forward one 64 into 128 result channels (past
    // kRowsMaxResult; a 2-D forward layer may have up to kRowsMaxGradResult, but with a tap
    // block below kRowsTapBytes: out), the weight gradient too (64 · 128 floats, 32 KiB: in).
    // In f64 the transposed block is 64 KiB: out. A 2-D forward layer of 48 -> 128 channels
    // (24 KiB) takes the channel rows; a 1-D one keeps kRowsMaxResult, and so does a 2-D one
    // of disjoint taps (2x2 stride 2 on a 16 x 16 result).
    const ConvGeometry g3 = conv2d(16, 64, 128, 32, 4);
    CHECK(plan(ConvKind::Transposed, g3).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Forward, g3).strategy != ConvStrategy::Rows);
    CHECK(plan(ConvKind::Forward, conv2d(16, 48, 128, 32, 4)).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::WeightGrad, g3).strategy == ConvStrategy::Rows);
    const ConvGeometry conv1d = ConvGeometry::forward(
        {.N = 8, .C_in = 32, .C_out = 128, .in_size = {512}, .kernel = {3}, .pads_begin = {1}, .pads_end = {1}});
    CHECK(plan(ConvKind::Forward, conv1d).strategy != ConvStrategy::Rows);
    CHECK(plan(ConvKind::Forward, ConvGeometry::forward({.N = 8, .C_in = 32, .C_out = 128, .in_size = {32, 32},
                                                         .kernel = {2, 2}, .stride = {2, 2}}))
              .strategy != ConvStrategy::Rows);
    CHECK(plan(ConvKind::WeightGrad, conv2d(16, 80, 128, 32, 4)).strategy != ConvStrategy::Rows);  // 80 · 128 floats: 40 KiB
    // Fewer than kRowsMinChannels reduction channels: a forward call takes the channel rows
    // only on 3-D layers with taps in padding (taps_in_bounds below 1). 8 -> 64
    // channels, k5 s2 p2 from 7³ to 4³: on each axis result position o reads 2o + k − 2 for
    // k < 5, inside [0, 7) for 3, 5, 5, 3 of the taps of o = 0..3, 16 of 20; 0.8³ = 0.512:
    // in. Without padding (k3 s2 p0 from 9³ to 4³, all inside): out; the same padded layer in
    // 2-D (0.8² = 0.64): out.
    const ConvGeometry few3d = ConvGeometry::forward({.N = 4, .C_in = 8, .C_out = 64, .in_size = {7, 7, 7},
                                                      .kernel = {5, 5, 5}, .stride = {2, 2, 2},
                                                      .pads_begin = {2, 2, 2}, .pads_end = {2, 2, 2}});
    CHECK(few3d.taps_in_bounds() == Approx(0.512));
    CHECK(plan(ConvKind::Forward, few3d).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Forward, ConvGeometry::forward({.N = 4, .C_in = 8, .C_out = 64, .in_size = {9, 9, 9},
                                                         .kernel = {3, 3, 3}, .stride = {2, 2, 2}}))
              .strategy != ConvStrategy::Rows);
    CHECK(plan(ConvKind::Forward, ConvGeometry::forward({.N = 4, .C_in = 8, .C_out = 64, .in_size = {7, 7}, .kernel = {5, 5},
                                                         .stride = {2, 2}, .pads_begin = {2, 2}, .pads_end = {2, 2}}))
              .strategy != ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, g3, SmallConv::Auto, 8).strategy != ConvStrategy::Rows);
    // 3-D layers with taps in padding, past the channel and tap-block limits. The transposed
    // 96 -> 256, k3 s2 p1 from 6³ to 11³ (i-side 256 channels of 11³, o-side 96 of 6³): on
    // each axis result o reads 2o + k − 1, inside [0, 11) for 5, 6, 5 of the 6 positions of
    // taps k = 0, 1, 2, 16 of 18; (8/9)³ = 0.702. Forward: 96 result channels (past
    // kRowsMaxResult) from 256 (a 96 KiB tap block): in. Weight gradient: 96 result channels,
    // up to kRowsMaxGradResult: in at 2 threads. Transposed: 96 · 27 / 8 = 324 products a
    // result, up to kRowsLongSums: in (with one image, not in a team of 2). The same
    // without padding (13³ to 6³), or in 2-D: out.
    auto pad3 = [](std::int64_t X, std::int64_t p, std::int64_t Og, std::int64_t K, std::size_t D = 3, std::int64_t N = 2) {
        return ConvGeometry::forward({.N = N, .C_in = 256, .C_out = Og, .in_size = Shape(D, X), .kernel = Shape(D, K),
                                      .stride = Shape(D, 2), .pads_begin = Shape(D, p), .pads_end = Shape(D, p)});
    };
    const ConvGeometry r6 = pad3(11, 1, 96, 3);
    CHECK(r6.taps_in_bounds() == Approx(512.0 / 729.0));
    for (ConvKind k : {ConvKind::Forward, ConvKind::WeightGrad, ConvKind::Transposed}) {
        CHECK(plan(k, r6).strategy == ConvStrategy::Rows);
        CHECK(plan(k, pad3(13, 0, 96, 3)).strategy != ConvStrategy::Rows);
        CHECK(plan(k, pad3(11, 1, 96, 3, 2)).strategy != ConvStrategy::Rows);
    }
    CHECK(plan(ConvKind::Transposed, pad3(11, 1, 96, 3, 3, 1)).strategy != ConvStrategy::Rows);
    CHECK(plan_conv(ConvKind::Transposed, pad3(11, 1, 96, 3, 3, 1), 1, kDefaultBudget, 4, TransposedAlgo::Auto).strategy ==
          ConvStrategy::Rows);
    // 192 result channels: the weight gradient on the channel rows at 1 thread, not in a team.
    // k5 p1 from 13³ to 6³ (192 o-side channels): the transposed call sums 192 · 125 / 8 =
    // 3 000 products a result, past kRowsLongSums: out; its forward call: in.
    const ConvGeometry wide = pad3(11, 1, 192, 3), k5 = pad3(13, 1, 192, 5);
    CHECK(plan_conv(ConvKind::WeightGrad, wide, 1, kDefaultBudget, 4, TransposedAlgo::Auto).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::WeightGrad, wide).strategy != ConvStrategy::Rows);
    CHECK(plan(ConvKind::Forward, k5).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, k5).strategy != ConvStrategy::Rows);
    // 2-D NCX transposed calls in f32 without padding whose results sum kRowsLongSums
    // products or more: the GEMM path at AVX-512. 64 o-side channels to 64 i-side ones, k4 s1
    // (forward view: 19 x 19 -> 16 x 16, every tap inside): 64 · 16 = 1 024 products a result:
    // out at AVX-512; in at AVX2, in NXC and in f64. 32 o-side channels at k5 s1 (32 · 25 =
    // 800): in. The 64-channel layer with padding 1 (17 x 17 -> 16 x 16): in.
    auto unpadded2d = [](std::int64_t Og, std::int64_t K, std::int64_t p, Layout layout = Layout::NCX) {
        const std::int64_t X = 15 + K - 2 * p;
        return ConvGeometry::forward({.N = 8, .C_in = 64, .C_out = Og, .in_size = {X, X}, .kernel = {K, K},
                                      .pads_begin = {p, p}, .pads_end = {p, p}, .layout = layout});
    };
    auto transposed_on = [&](const ConvGeometry& g, simd::Isa isa, std::size_t eb = 4, SmallConv m = SmallConv::Auto) {
        return plan(ConvKind::Transposed, g, m, eb, isa).strategy;
    };
    CHECK(unpadded2d(64, 4, 0).out_size == Shape{16, 16});
    CHECK(unpadded2d(64, 4, 0).taps_in_bounds() == 1.0);
    CHECK(transposed_on(unpadded2d(64, 4, 0), simd::Isa::avx512) != ConvStrategy::Rows);
    CHECK(transposed_on(unpadded2d(64, 4, 0), simd::Isa::avx2) == ConvStrategy::Rows);
    CHECK(transposed_on(unpadded2d(64, 4, 0, Layout::NXC), simd::Isa::avx512) == ConvStrategy::Rows);
    CHECK(transposed_on(unpadded2d(64, 4, 0), simd::Isa::avx512, 8) == ConvStrategy::Rows);
    CHECK(transposed_on(unpadded2d(32, 5, 0), simd::Isa::avx512) == ConvStrategy::Rows);
    CHECK(transposed_on(unpadded2d(64, 4, 1), simd::Isa::avx512) == ConvStrategy::Rows);
    CHECK(transposed_on(unpadded2d(64, 4, 0), simd::Isa::avx512) ==
          transposed_on(unpadded2d(64, 4, 0), simd::Isa::avx512, 4, SmallConv::Never));
    // The transposed call by its taps per result position (∏K / ∏s) and disjoint taps (a
    // forward geometry with C_in result and C_out reduction channels of the transposed call):
    // 128 result channels from 64 or 48 o-side ones on the channel rows where a position takes
    // kRowsTransposedTaps taps or more (3x3 stride 1: 9; 4x4 stride 2: 4), the GEMM path where
    // fewer (4x4 stride 3: 16/9) unless the input image has fewer than kRowsSmallImage
    // positions (4 x 4); disjoint taps (2x2 stride 2) leave the channel rows even at 64 result
    // channels, unless the image is small or the last stride is 3 (3x3 stride 3: element by
    // element scatters).
    auto strided = [](std::int64_t Ci, std::int64_t Co, std::int64_t X, std::int64_t K, std::int64_t s) {
        return ConvGeometry::forward(
            {.N = 8, .C_in = Ci, .C_out = Co, .in_size = {X, X}, .kernel = {K, K}, .stride = {s, s}});
    };
    CHECK(plan(ConvKind::Transposed, conv2d(16, 128, 64, 32, 3)).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, strided(128, 48, 32, 4, 2)).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, strided(128, 48, 31, 4, 3)).strategy != ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, strided(128, 48, 13, 4, 3)).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, strided(64, 48, 31, 4, 3)).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, strided(64, 64, 32, 2, 2)).strategy != ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, strided(64, 64, 8, 2, 2)).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, strided(64, 64, 30, 3, 3)).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Forward, strided(64, 64, 32, 2, 2)).strategy == ConvStrategy::Rows);
    // Few products a result (32 o-side channels, 3x3 stride 2: 32 · 9 / 4 = 72 under
    // kRowsTransposedSums): the channel rows only while the result is at most
    // kRowsTransposedBytes (8 images of 128 channels of 64 x 64 floats: 16 MiB, 2 images: 4).
    auto k3s2 = [](std::int64_t N) {
        return ConvGeometry::forward({.N = N, .C_in = 128, .C_out = 32, .in_size = {64, 64}, .kernel = {3, 3},
                                      .stride = {2, 2}, .pads_begin = {1, 1}, .pads_end = {1, 1}});
    };
    CHECK(plan(ConvKind::Transposed, k3s2(8)).strategy != ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, k3s2(2)).strategy == ConvStrategy::Rows);
    // The autoencoder's second layer (16 -> 32, 3x3 stride 2): forward and transposed keep the
    // small-channel kernels (16 channels a side); its weight gradient, past their limit
    // (Ig·∏K = 144 with stride 2), takes the channel-row one.
    const ConvGeometry a2 = ConvGeometry::forward({.N = 64, .C_in = 16, .C_out = 32, .in_size = {14, 14}, .kernel = {3, 3},
                                                   .stride = {2, 2}, .pads_begin = {1, 1}, .pads_end = {1, 1}});
    CHECK(plan(ConvKind::Forward, a2).strategy == ConvStrategy::Small);
    CHECK(plan(ConvKind::Transposed, a2).strategy == ConvStrategy::Small);
    CHECK(plan(ConvKind::WeightGrad, a2).strategy == ConvStrategy::Rows);
    // 3-D transposed calls that the small-channel kernels fit go to the channel rows with 32
    // result (i-side) channels or more, or 16 summing kRowsTransposedSums products a result,
    // whatever their reduction channels; 16 with fewer products, 8, and 2-D layers do not.
    auto c3d = [](std::int64_t N, std::int64_t Ig, std::int64_t Og, std::int64_t X, std::int64_t k, std::int64_t s,
                  std::int64_t p) {
        return ConvGeometry::forward({.N = N, .C_in = Ig, .C_out = Og, .in_size = {X, X, X}, .kernel = {k, k, k},
                                      .stride = {s, s, s}, .pads_begin = {p, p, p}, .pads_end = {p, p, p}});
    };
    const ConvGeometry r32 = c3d(4, 32, 8, 8, 5, 2, 2), r32s1 = c3d(2, 32, 4, 8, 3, 1, 1), r16 = c3d(4, 16, 16, 12, 5, 1, 0);
    const ConvGeometry s16 = c3d(4, 16, 8, 12, 3, 2, 1), s8 = c3d(16, 8, 24, 11, 5, 2, 0);
    CHECK(s16.Og * s16.kernel_numel() < kRowsTransposedSums * 8);
    CHECK(r16.Og * r16.kernel_numel() >= kRowsTransposedSums);
    for (const ConvGeometry& g : {r32, r32s1, r16}) CHECK(plan(ConvKind::Transposed, g).strategy == ConvStrategy::Rows);
    for (const ConvGeometry& g : {s16, s8}) CHECK(plan(ConvKind::Transposed, g).strategy == ConvStrategy::Small);
    // The transposed call of 9-16 o-side channels to any number of i-side ones, taps
    // overlapping: the channel rows (past kRowsMaxResult too); disjoint taps and 1-D layers at
    // stride 1 keep the GEMM path.
    auto few = [](std::int64_t Og, std::int64_t Ig, Shape X, std::int64_t k, std::int64_t s) {
        const std::size_t D = X.size();
        return ConvGeometry::forward({.N = 4, .C_in = Ig, .C_out = Og, .in_size = X, .kernel = Shape(D, k),
                                      .stride = Shape(D, s)});
    };
    CHECK(plan(ConvKind::Transposed, few(12, 128, {19, 19}, 4, 1)).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, few(16, 256, {29, 29}, 2, 1)).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, few(9, 96, {131}, 5, 2)).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, few(12, 128, {32, 32}, 2, 2)).strategy != ConvStrategy::Rows);
    CHECK(plan(ConvKind::Transposed, few(9, 64, {258}, 3, 1)).strategy != ConvStrategy::Rows);
    // dcgan_g2 (256 -> 128): both past the limits.
    for (ConvKind k : {ConvKind::Forward, ConvKind::Transposed})
        CHECK(plan(k, conv2d(16, 128, 256, 16, 4)).strategy != ConvStrategy::Rows);
    // Fewer than 16 channels a side (dcgan_g4's 3, the classifier's first layer's 1): no.
    for (ConvKind k : {ConvKind::Forward, ConvKind::Transposed}) {
        CHECK(plan(k, conv2d(16, 3, 64, 64, 4)).strategy != ConvStrategy::Rows);
        CHECK(plan(k, conv2d(64, 1, 16, 28, 3)).strategy != ConvStrategy::Rows);
    }
    // NXC by the same rule (no small-channel kernels there: the classifier's second layer too).
    for (ConvKind k : {ConvKind::Forward, ConvKind::Transposed, ConvKind::WeightGrad}) {
        CHECK(plan(k, conv2d(4, 64, 64, 32, 3, 1, Layout::NXC)).strategy == ConvStrategy::Rows);
        CHECK(plan(k, conv2d(64, 16, 32, 14, 3, 1, Layout::NXC)).strategy == ConvStrategy::Rows);
        CHECK(plan(k, conv2d(16, 128, 256, 16, 4, 1, Layout::NXC)).strategy != ConvStrategy::Rows);
    }
    // 16 and 32 channels: where the small-channel kernels fit (the classifier's second
    // layer) they keep it; where they do not (5x5 taps: a grid 18x18 for 14x14 results,
    // past kSmallWaste) the channel-row kernels take it.
    for (ConvKind k : {ConvKind::Forward, ConvKind::Transposed}) {
        CHECK(plan(k, conv2d(64, 16, 32, 14, 3)).strategy == ConvStrategy::Small);
        CHECK(plan(k, conv2d(32, 16, 32, 14, 5)).strategy == ConvStrategy::Rows);
    }
    // The weight gradient needs whole vectors of result channels (Og), not reduction ones (Ig):
    // 16+ result channels from fewer reduction ones where a pair sums 8 rows or more (Ig times
    // the last axis' taps at dilation 1; at 2 threads too, each thread summing its part of the
    // images; where the small-channel kernels fit, they come first for sleeping teams); from 32+
    // reduction channels any 16+ result channels (padded too), or 8+ where a stride leaves
    // taps that overlap.
    auto grad = [](const ConvGeometry& g, int team) {
        return plan_conv(ConvKind::WeightGrad, g, team, kDefaultBudget, 4, TransposedAlgo::Auto).strategy;
    };
    auto layer = [](std::int64_t Ci, std::int64_t Co, std::int64_t K, std::int64_t s, std::int64_t d = 1) {
        return ConvGeometry::forward({.N = 16, .C_in = Ci, .C_out = Co, .in_size = {32, 32}, .kernel = {K, K},
                                      .stride = {s, s}, .dilation = {d, d}, .pads_begin = {1, 1}, .pads_end = {1, 1}});
    };
    CHECK(grad(layer(3, 64, 4, 2), 1) == ConvStrategy::Rows);  // dcgan_g4's: 3 · 4 rows a pair
    CHECK(grad(layer(3, 64, 4, 2), 2) == ConvStrategy::Rows);  // images split: no barriers, sleeping or not
    CHECK(grad(layer(1, 16, 3, 1), 1) != ConvStrategy::Rows);  // the classifier's first layer: 3 rows
    CHECK(grad(layer(4, 16, 3, 1, 2), 1) != ConvStrategy::Rows);  // dilated: 4 rows
    CHECK(grad(layer(4, 16, 3, 1), 1) == ConvStrategy::Rows);     // 12
    CHECK(grad(layer(16, 16, 3, 1), 1) == ConvStrategy::Rows);  // small-channel kernels fit too: rows first
    CHECK(grad(layer(16, 16, 3, 1), 2) == (team_threads_sleep() ? ConvStrategy::Small : ConvStrategy::Rows));
    // 24 result channels: three whole vectors at AVX2, padded by a quarter at AVX-512
    CHECK((grad(layer(8, 24, 3, 1), 2) == ConvStrategy::Rows) == (rows_padded_channels(24, 4) == 24));
    CHECK(grad(layer(48, 24, 3, 1), 2) == ConvStrategy::Rows);
    // 8 result channels: the channel rows where they fill a vector (AVX2), else (AVX-512) and
    // for sleeping teams the small-channel kernels
    const bool half_vectors = rows_padded_channels(8, 4) > 8;
    CHECK(grad(layer(48, 8, 5, 2), 1) == (half_vectors ? ConvStrategy::Small : ConvStrategy::Rows));
    CHECK(grad(layer(48, 8, 5, 2), 2) ==
          (half_vectors || team_threads_sleep() ? ConvStrategy::Small : ConvStrategy::Rows));
    CHECK(grad(layer(48, 8, 5, 1), 2) != ConvStrategy::Rows);
    CHECK(grad(layer(48, 8, 2, 2), 2) != ConvStrategy::Rows);   // disjoint taps
    CHECK(grad(layer(48, 4, 5, 2), 2) != ConvStrategy::Rows);
    CHECK(grad(layer(24, 8, 5, 2), 2) != ConvStrategy::Rows);
    CHECK(grad(layer(48, 8, 1, 2), 2) != ConvStrategy::Rows);   // k1 s2 skips positions
    // Forced: every call that is not depthwise, NCX or NXC; a transposed algorithm asked for
    // by name wins.
    CHECK(plan(ConvKind::Forward, conv2d(16, 3, 64, 64, 4), SmallConv::Rows).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::Forward, conv2d(2, 8, 8, 10, 3, 8), SmallConv::Rows).strategy == ConvStrategy::Depthwise);
    CHECK(plan(ConvKind::Forward, conv2d(4, 64, 64, 32, 3, 1, Layout::NXC), SmallConv::Rows).strategy == ConvStrategy::Rows);
    CHECK(plan(ConvKind::WeightGrad, conv2d(4, 64, 64, 32, 3), SmallConv::Rows).strategy == ConvStrategy::Rows);
    CHECK(plan_conv(ConvKind::Transposed, conv2d(4, 64, 64, 32, 3), 2, kDefaultBudget, 4, TransposedAlgo::Col2im,
                    SmallConv::Rows).strategy != ConvStrategy::Rows);
}

TEST_CASE("conv plan: every plan of the conv table keeps the rules", "[conv_plan]") {
    std::set<ConvStrategy> seen;
    for (const ConvConfig& c : conv_table())
        for (Layout layout : {Layout::NCX, Layout::NXC})
            for (bool tr : {false, true})
                for (ConvKind kind : {ConvKind::Forward, ConvKind::Transposed, ConvKind::WeightGrad})
                    for (int team : {1, 2, 3})
                        for (std::int64_t budget : {c.budget, std::int64_t{256}, kDefaultBudget})
                            for (std::size_t eb : {std::size_t{4}, std::size_t{8}}) {
                                const ConvGeometry g = tr ? transposed_geometry(c, layout) : forward_geometry(c, layout);
                                const ConvPlan p = plan_conv(kind, g, team, budget, eb, TransposedAlgo::Auto, SmallConv::Never);
                                const std::string what = c.name + (layout == Layout::NXC ? " NXC" : " NCX") +
                                                         (tr ? " transposed" : " forward") + " kind " +
                                                         std::to_string(static_cast<int>(kind)) + " team " +
                                                         std::to_string(team) + " budget " + std::to_string(budget) +
                                                         " " + strategy_name(p.strategy);
                                INFO(what);
                                seen.insert(p.strategy);
                                if (g.Ig == 1 && g.Og == 1) {
                                    CHECK(p.strategy == ConvStrategy::Depthwise);
                                    continue;
                                }
                                check_tiles_cover(p, g, what);
                                CHECK(p.team == team);
                                // Column and staging buffers stay within the budget unless a tile
                                // is down to one column (Partials' gradients: a quarter on top).
                                std::int64_t widest = 0;
                                for (const ColTile& t : p.tiles) widest = std::max(widest, t.cols());
                                if (widest > 1)
                                    CHECK((p.scratch_elems() - p.partial_elems) * static_cast<std::int64_t>(eb) <= budget);
                                // NCX transposed: col2im writes the planes of tiles of whole images.
                                bool whole = true;
                                for (const ColTile& t : p.tiles) whole = whole && t.p0 == 0 && t.p1 == g.out_numel();
                                CHECK(p.writes_all == (kind == ConvKind::Forward ||
                                                       (kind == ConvKind::Transposed && layout == Layout::NCX && whole)));
                                CHECK(p.k_major == (layout == Layout::NXC));
                                switch (p.strategy) {
                                    case ConvStrategy::Serial: CHECK(team == 1); break;
                                    case ConvStrategy::Partials:
                                        CHECK(kind == ConvKind::WeightGrad);
                                        CHECK(p.tiles.size() >= 2);
                                        CHECK(p.partial_elems == static_cast<std::int64_t>(p.tiles.size()) * g.G * g.Og * g.R());
                                        CHECK(p.partial_elems * static_cast<std::int64_t>(eb) <= budget / 4);
                                        break;
                                    case ConvStrategy::Units:  // disjoint outputs: forward, or transposed whole images
                                        CHECK(kind != ConvKind::WeightGrad);
                                        if (kind == ConvKind::Transposed)
                                            for (const ColTile& t : p.tiles) CHECK((t.p0 == 0 && t.p1 == g.out_numel()));
                                        CHECK(p.buffers == team);
                                        break;
                                    case ConvStrategy::Images:
                                        CHECK(kind == ConvKind::Transposed);
                                        CHECK(g.N >= team);
                                        for (const ColTile& t : p.tiles) CHECK(t.nb == 1);
                                        break;
                                    case ConvStrategy::Channels:
                                        CHECK(kind == ConvKind::Transposed);
                                        CHECK(layout == Layout::NCX);
                                        CHECK(g.Ig >= team);
                                        CHECK_FALSE(p.pack_weight);
                                        break;
                                    case ConvStrategy::Groups:
                                        CHECK(g.G >= team);
                                        CHECK(p.buffers == team);
                                        break;
                                    case ConvStrategy::Team: CHECK(p.buffers == 1); break;
                                    default: FAIL("a direct strategy for a GEMM layer");
                                }
                            }
    // The table reaches every GEMM strategy but the single-image Channels split (hand case above).
    for (ConvStrategy s : {ConvStrategy::Depthwise, ConvStrategy::Serial, ConvStrategy::Partials, ConvStrategy::Units,
                           ConvStrategy::Images, ConvStrategy::Groups, ConvStrategy::Team}) {
        INFO(strategy_name(s));
        CHECK(seen.count(s) == 1);
    }
}
