// The one table of convolution configurations that drives the kernel, adjoint, golden and
// gradient tests. Each row is per-axis {X, K, s, d, pb, pe, op} plus batch, groups and
// channels per group, and a column-buffer budget (small budgets force the kernels to split
// batches and positions into tiles).
//   forward_geometry:    CONV from an i-side of size X (Rule F explicit, pads pb/pe)
//   transposed_geometry: CONVT from an o-side of size X to Y = s·(X−1) + eff − pb − pe + op
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_geometry.hpp"
#include "tapegrad/ops/conv_plan.hpp"

namespace tg::testing {

struct Axis {
    std::int64_t X, K, s = 1, d = 1, pb = 0, pe = 0, op = 0;
};

struct ConvConfig {
    std::string name;
    std::int64_t N, G, Ig, Og;
    std::vector<Axis> axes;
    std::int64_t budget = std::int64_t{64} << 20;  // conv workspace bytes
};

// Sets the workspace budget for a scope (a row's `budget`: small budgets force the kernels
// to tile) and restores the previous one, even when a check throws.
struct WorkspaceGuard {
    std::int64_t prev = workspace_budget();
    explicit WorkspaceGuard(std::int64_t bytes) { set_workspace_budget(bytes); }
    ~WorkspaceGuard() { set_workspace_budget(prev); }
    WorkspaceGuard(const WorkspaceGuard&) = delete;
    WorkspaceGuard& operator=(const WorkspaceGuard&) = delete;
};

// Sets whether small-channel layers take the direct kernels (tapegrad/ops/conv_small.hpp)
// for a scope, and restores the setting, even when a check throws.
struct SmallConvGuard {
    SmallConv prev = small_conv();
    explicit SmallConvGuard(SmallConv mode) { set_small_conv(mode); }
    ~SmallConvGuard() { set_small_conv(prev); }
    SmallConvGuard(const SmallConvGuard&) = delete;
    SmallConvGuard& operator=(const SmallConvGuard&) = delete;
};

// The ways of running an NCX layer that is not depthwise: the GEMM paths, the small-channel
// kernels and the channel-row kernels (forward and transposed; their weight gradient is the GEMM's).
inline const std::vector<SmallConv>& conv_paths() {
    static const std::vector<SmallConv> m = {SmallConv::Never, SmallConv::Always, SmallConv::Rows};
    return m;
}
inline const char* path_name(SmallConv m) {
    return m == SmallConv::Always ? " (direct)" : m == SmallConv::Rows ? " (rows)" : " (gemm)";
}

inline const std::vector<ConvConfig>& conv_table() {
    static const std::vector<ConvConfig> t = {
        {"1d basic", 1, 1, 2, 3, {{7, 3}}},
        {"1d stride2 asym pads op1", 2, 1, 2, 2, {{5, 3, 2, 1, 1, 0, 1}}},
        {"1d stride3 dil2", 1, 1, 3, 2, {{9, 3, 3, 2, 2, 1}}},
        {"1d k1 stride2", 2, 1, 3, 2, {{8, 1, 2}}},
        {"1d kernel larger than input", 1, 1, 1, 2, {{2, 5, 1, 1, 2, 2}}},
        {"1d groups2 batch3", 3, 2, 2, 3, {{6, 3, 2, 1, 1, 1, 1}}},
        {"1d depthwise", 2, 4, 1, 1, {{7, 3, 1, 2, 2, 2}}},
        {"2d basic", 1, 1, 2, 2, {{5, 3}, {4, 2}}},
        {"2d stride2 pad1", 2, 1, 3, 2, {{6, 3, 2, 1, 1, 1}, {5, 3, 2, 1, 1, 1, 1}}},
        {"2d asym pads", 1, 1, 2, 3, {{5, 3, 1, 1, 2, 0}, {6, 2, 2, 1, 0, 1}}},
        {"2d dil3 stride2", 1, 1, 2, 2, {{9, 3, 2, 3, 1, 2}, {8, 2, 1, 3, 0, 0}}},
        {"2d groups2", 2, 2, 2, 2, {{5, 3, 1, 1, 1, 1}, {5, 3, 2, 1, 1, 1, 1}}},
        {"2d depthwise stride2", 2, 3, 1, 1, {{6, 3, 2, 1, 1, 1, 1}, {6, 3, 2, 1, 1, 1}}},
        {"2d depthwise multiplier", 1, 3, 1, 2, {{5, 3}, {4, 2, 1, 2, 1, 1}}},
        {"2d 1x1 stride3", 2, 1, 4, 3, {{7, 1, 3}, {6, 1, 3}}},
        {"2d op past pe", 1, 1, 2, 2, {{4, 3, 3, 1, 1, 0, 2}, {3, 2, 2, 1, 0, 0, 1}}},
        {"2d stride3 dil2 op", 1, 1, 2, 2, {{5, 3, 3, 2, 1, 1, 2}, {4, 2, 3, 1, 0, 1}}},
        {"2d kernel larger than input", 1, 1, 1, 1, {{2, 4, 1, 1, 2, 1}, {3, 3, 1, 1, 1, 1}}},
        {"2d tiles split batch", 4, 1, 2, 3, {{5, 3, 1, 1, 1, 1}, {4, 3, 1, 1, 1, 1}}, 600},
        {"2d tiles split positions", 2, 2, 2, 2, {{7, 3, 2, 1, 1, 1, 1}, {6, 2, 1, 1, 0, 0}}, 200},
        {"1d stride8 k16 tiles split positions", 2, 1, 2, 3, {{136, 16, 8, 1, 4, 4}}, 300},
        {"2d stride5", 1, 1, 2, 2, {{45, 7, 5, 1, 3, 3}, {6, 3, 1, 1, 1, 1}}},
        {"3d basic", 1, 1, 2, 2, {{4, 2}, {3, 2}, {4, 3}}},
        {"3d stride2 pad dil", 2, 1, 2, 2, {{5, 3, 2, 1, 1, 1, 1}, {4, 2, 1, 2, 0, 1}, {5, 3, 2, 1, 1, 0}}},
        {"3d groups2", 1, 2, 1, 2, {{4, 2, 2, 1, 0, 0, 1}, {3, 3, 1, 1, 1, 1}, {4, 2, 1, 1, 0, 0}}},
        {"3d depthwise tiles", 2, 2, 1, 1, {{4, 3, 1, 1, 1, 1}, {4, 3, 2, 1, 1, 1, 1}, {3, 2, 1, 1, 0, 0}}, 300},
        {"3d 1x1 stride2", 1, 1, 3, 2, {{5, 1, 2}, {4, 1, 2}, {3, 1, 1}}},
        {"3d 40 from 3 k3 s2 (transposed: rows)", 1, 1, 40, 3, {{3, 3, 2, 1, 1, 1, 1}, {3, 3, 2, 1, 1, 1, 1}, {3, 3, 2, 1, 1, 1}}},
    };
    return t;
}

inline std::int64_t effective_extent(const Axis& a) { return a.d * (a.K - 1) + 1; }

// The row's settings for the geometry constructors: a forward convolution's input has
// G·Ig channels, a transposed convolution's input G·Og.
inline ConvParams conv_params(const ConvConfig& c, Layout layout, bool transposed) {
    ConvParams p{.N = c.N, .C_in = c.G * (transposed ? c.Og : c.Ig), .C_out = c.G * (transposed ? c.Ig : c.Og),
                 .groups = c.G, .layout = layout};
    for (const Axis& a : c.axes) {
        p.in_size.push_back(a.X);
        p.kernel.push_back(a.K);
        p.stride.push_back(a.s);
        p.dilation.push_back(a.d);
        p.pads_begin.push_back(a.pb);
        p.pads_end.push_back(a.pe);
        if (transposed) p.output_padding.push_back(a.op);
    }
    return p;
}

// CONV on an i-side of size X: Y = ⌊(X + pb + pe − eff)/s⌋ + 1.
inline ConvGeometry forward_geometry(const ConvConfig& c, Layout layout = Layout::NCX) {
    return ConvGeometry::forward(conv_params(c, layout, false));
}

// CONVT from an o-side of size X to Y = s·(X−1) + eff − pb − pe + op.
inline ConvGeometry transposed_geometry(const ConvConfig& c, Layout layout = Layout::NCX) {
    return ConvGeometry::transposed(conv_params(c, layout, true));
}

}  // namespace tg::testing
