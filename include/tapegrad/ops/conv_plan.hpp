// How one call of a conv kernel runs, decided before anything runs.
//
// plan_conv is a pure function of the call (kind, geometry, the team it may use, the
// workspace budget, the element size, the transposed algorithm): it picks one strategy,
// cuts the batch into tiles of columns and sizes every buffer. The executors
// (ops/conv_kernels.cpp, one per strategy) only carry a plan out, so the decisions are
// tested here without running a kernel (tests/test_conv_plan.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tapegrad/core/simd.hpp"
#include "tapegrad/ops/conv_geometry.hpp"
#include "tapegrad/ops/im2col.hpp"

namespace tg {

// The three computations of the family (tapegrad/ops/conv_kernels.hpp).
enum class ConvKind { Forward, Transposed, WeightGrad };

// How conv_transposed runs a layer that is not depthwise: `Auto` picks per layer (col2im
// on every layer measured, bench/RESULTS.md); `Col2im` is one GEMM with K = Og and a
// scatter-add of its columns; `Phases` is the stride-phase decomposition
// (tapegrad/ops/conv_phases.hpp, NCX only; NXC layers keep col2im). Tests and benchmarks
// force one; TAPEGRAD_TRANSPOSED=auto|col2im|phases sets it on first use (docs/settings.md).
enum class TransposedAlgo { Auto, Col2im, Phases };
void set_transposed_algo(TransposedAlgo algo);
TransposedAlgo transposed_algo();

// Whether layers run the direct kernels: those for few channels per group (NCX,
// tapegrad/ops/conv_small.hpp) and those with the channels as the vector (NCX and NXC,
// tapegrad/ops/conv_rows.hpp). `Auto`: by the rules in plan_conv; `Never`: the GEMM paths;
// `Always`: the small-channel kernels on every NCX layer that is not depthwise; `Rows`: the
// channel-row kernels on every layer that is not depthwise. Tests force each. A transposed
// algorithm other than Auto wins over it. TAPEGRAD_SMALL_CONV=auto|never|always|rows sets it
// on first use.
enum class SmallConv { Auto, Never, Always, Rows };
void set_small_conv(SmallConv mode);
SmallConv small_conv();

enum class ConvStrategy {
    Depthwise,  // Ig = Og = 1 where Small does not apply (NXC, the smallest): tapegrad/ops/conv_direct.hpp
    Small,      // few channels per group (NCX): the direct kernels of tapegrad/ops/conv_small.hpp
    Rows,       // tens of channels per group (NCX, NXC): tapegrad/ops/conv_rows.hpp
    Phases,     // the transposed kernel by stride phases (tapegrad/ops/conv_phases.hpp)
    Serial,     // one thread: tiles in order, groups in order
    Units,      // each thread takes whole (tile, group) units with buffers of its own, no
                // barriers: units write disjoint outputs (forward tiles, transposed tiles
                // of whole images), whose values do not depend on the tiling
    Groups,     // tiles in order; each thread takes whole groups, with buffers of its own
    Partials,   // weight gradient: each (tile, group) unit adds into a partial gradient of
                // its tile; the partials are added into the result in tile order, so the
                // sum is the same for any team (1 and 2 threads agree bit for bit)
    Images,     // transposed on chunks of one image, at least as many images as threads:
                // each thread takes the chunks of whole images, in order, no barriers
    Channels,   // NCX transposed: each thread takes a range of i-side channels, packs their
                // rows of the weight, makes their rows of col and adds them in, no barriers
    Team,       // the whole team on one group of one tile at a time, barriers between steps
};
const char* strategy_name(ConvStrategy s);

struct ConvPlan {
    ConvKind kind = ConvKind::Forward;
    ConvStrategy strategy = ConvStrategy::Serial;
    int team = 1;                    // threads of the call (1: the calling thread only)
    std::vector<ColTile> tiles;      // GEMM strategies: the batch's columns, in order
    int buffers = 1;                 // copies of the staging buffers, and of the column buffers
                                     // but for Channels (one, split by rows)
    std::int64_t col_elems = 0;      // per copy: R × the widest tile, where columns are built
                                     // (NXC, and the transposed GEMM's product; NCX transposed
                                     // but for Team: a block of rows, see plan_conv)
    std::int64_t stage_elems = 0;    // per copy: Og × the widest tile (NCX tiles of several images)
    std::int64_t partial_elems = 0;  // Partials: one weight gradient per tile
    bool pack_weight = false;        // NCX forward/transposed: each group's weight packed once
    bool k_major = false;            // NXC: the weight is used in (k, i) row order

    // The kernel writes every element of its result (no zero-filled result needed).
    bool writes_all = false;
    // NCX transposed but for Team: the GEMM makes col a block of rows at a time (gemm_row_blocks).
    bool row_blocks = false;
    std::size_t elem_bytes = 4;  // of the compute type
    // Copies of the column buffer: one per staging buffer, but one shared (split by rows) for Channels.
    int col_copies() const { return strategy == ConvStrategy::Channels ? 1 : buffers; }
    // Elements of col that `rows` of its rows need on every tile: with row blocks, one block
    // for each tile's width (gemm_block_rows; all the rows where the GEMM does not block),
    // else the rows of the widest tile. Channels gives each thread such a part for its rows.
    std::int64_t col_part(const ConvGeometry& g, std::int64_t rows) const;
    // Channels: where thread `id` of a team of `team` threads starts in col (the parts of the
    // threads before it, each for its share of the i-side channels); id = team: col's size.
    std::int64_t channel_col_offset(const ConvGeometry& g, int id, int team) const;
    // Elements of scratch the executor allocates for this plan: the column and staging
    // buffers (within the budget, unless a tile is down to one column) and the partial
    // gradients (within a quarter of the budget, on top). Not counted: the packed weights
    // and the direct strategies' own buffers.
    std::int64_t scratch_elems() const;
};

// The plan for `kind` on `g` with at most `team` threads, `budget` bytes of workspace and
// elements of `elem_bytes` bytes (the compute type: 4 for f32, f16 and bf16, 8 for f64), for
// the kernels of instruction set `isa` (the one in use unless a test names one).
ConvPlan plan_conv(ConvKind kind, const ConvGeometry& g, int team, std::int64_t budget, std::size_t elem_bytes,
                   TransposedAlgo algo, SmallConv small = SmallConv::Auto, simd::Isa isa = simd::active());

// A tile holds about this many bytes of buffers per thread (a core's L2), and at least
// kMinTileCols columns (kMinPackedTileCols where the weight is packed once per call).
inline constexpr std::int64_t kTileCacheBytes = std::int64_t{1} << 20;
inline constexpr std::int64_t kMinTileCols = 512, kMinPackedTileCols = 128;
// NCX forward and transposed: images of at least this many o-side positions take a tile each
// (no staging copy; dcgan_g4's forward, 1 024 positions, 1.12 -> 0.82 ms, dilated_d2's 2.74 -> 2.21).
inline constexpr std::int64_t kWideImageCols = 256;
// The small-channel rule's limits (see plan_conv).
inline constexpr std::int64_t kSmallOg = 32, kSmallIg = 32, kSmallR = 256, kSmallRStrided = 64, kSmallTinyOg = 8,
                              kSmallTinyImageBytes = 2 * kTileCacheBytes, kSmallGradWeights = kSmallOg * kSmallR;
inline constexpr double kSmallMinMacs = 65536, kSmallWaste = 1.5;
// The channel-row rule's limits (see plan_conv). kRowsLongSums: products a transposed call's
// result sums (Og·∏K/∏s) from which the GEMM path's register tile does better than the rows
// (3-D layers with taps in padding keep the rows up to it; 2-D ones without padding, in f32 at
// AVX-512, leave them from it).
inline constexpr std::int64_t kRowsMinChannels = 16, kRowsMaxResult = 64, kRowsMaxGradResult = 128, kRowsTapBytes = 32 << 10,
                              kRowsOverSmall = 32, kRowsTransposedTaps = 2, kRowsTransposedSums = 128,
                              kRowsTransposedBytes = std::int64_t{12} << 20,
                              kRowsSmallImage = 64, kRowsGradManySums = 32, kRowsGradMinResult = 8, kRowsGradMinRows = 8,
                              kRowsGradImageParts = 2, kRowsLongSums = 1024;

}  // namespace tg
