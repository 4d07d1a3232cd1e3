#include "tapegrad/ops/im2col.hpp"

#include "tapegrad/ops/vec_kernels.hpp"

#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_axes.hpp"
#include "tapegrad/ops/vec.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <tuple>
#include <vector>

namespace tg {

namespace {

// Calls f(ni, q0, q1, at) for each image of the tile that columns [c0, c1) touch: positions
// [q0, q1) of image ni, starting at column `at`.
template <class F>
void for_images(const ColTile& t, std::int64_t c0, std::int64_t c1, F&& f) {
    const std::int64_t W = t.width();
    for (std::int64_t c = c0; c < c1;) {
        const std::int64_t ni = c / W, q0 = t.p0 + c % W;
        const std::int64_t q1 = std::min(t.p1, q0 + (c1 - c));
        f(ni, q0, q1, c);
        c += q1 - q0;
    }
}

}  // namespace

namespace {

// The runs of tap kf over tile columns [c0, c1), one per run of positions sharing their
// outer coordinates, split at panel boundaries, at dst offsets in units of the column
// layout; src is an offset from the start of the row's channel plane in image 0 of the tile.
// They are the same for every channel, so a call lists them once per tap and replays them
// for each channel.
void list_segments(const Axes& ax, const ColTile& tile, std::int64_t kf, std::int64_t c0, std::int64_t c1,
                   const PanelLayout& cl, std::vector<vec::LaneRun>& out) {
    out.clear();
    std::int64_t k[kMaxD];
    ax.unravel(kf, ax.K, k);
    const std::int64_t sl = ax.s[ax.D - 1], image = ax.Ctot * ax.Xn;
    const Axes::Window win = ax.last_axis_window(ax.last_axis_base(k));
    // The runs cover columns c0, c0 + 1, ... in order, so the panel of the next column and
    // the place in it are counted along instead of divided out.
    std::int64_t panel = 0, in_panel = 0;
    for_images(tile, c0, c1, [&](std::int64_t ni, std::int64_t q0, std::int64_t q1, std::int64_t) {
        ax.for_runs(q0, q1, k, [&](std::int64_t, std::int64_t len, bool ok, std::int64_t off, std::int64_t a0,
                                   std::int64_t kbase) {
            std::int64_t lo = 0, hi = 0;  // [lo, hi) from the input, zeros around it
            if (ok) win.clip(a0, len, lo, hi);
            for (std::int64_t t = 0; t < len;) {
                const std::int64_t piece = cl.panel ? std::min(len - t, cl.panel - in_panel) : len - t;
                const std::int64_t plo = std::clamp(lo - t, std::int64_t{0}, piece), phi = std::clamp(hi - t, plo, piece);
                const std::int64_t src = phi > plo ? ni * image + off + (a0 + t + plo) * sl + kbase : 0;
                const std::int64_t dst = cl.panel ? panel * cl.panel_stride + in_panel * cl.ld : in_panel * cl.ld;
                out.push_back({src, dst, piece, plo, phi});
                t += piece;
                in_panel += piece;
                if (cl.panel && in_panel == cl.panel) {
                    ++panel;
                    in_panel = 0;
                }
            }
        });
    });
}

// Run lists kept per thread across calls, keyed by everything they depend on (a training
// loop asks for the same ones every step). Emptied once they pass kMaxRuns runs (about
// 10 MiB), so a program that goes through many geometries keeps only its recent ones.
template <class V>
class RunCache {
public:
    static constexpr std::int64_t kMaxRuns = std::int64_t{1} << 18;

    // The entry of `key`, and whether it is new (then empty: the caller fills it).
    V& find(const std::vector<std::int64_t>& key, bool& fresh) {
        fresh = false;
        if (last_ && last_->first == key) return last_->second;
        for (const std::unique_ptr<Entry>& e : entries_)
            if (e->first == key) return (last_ = e.get())->second;
        if (runs_ > kMaxRuns) {
            entries_.clear();
            runs_ = 0;
        }
        fresh = true;
        entries_.push_back(std::make_unique<Entry>(key, V{}));
        return (last_ = entries_.back().get())->second;
    }
    // Counts the runs of a list just made.
    void added(std::int64_t runs) { runs_ += runs; }

private:
    using Entry = std::pair<std::vector<std::int64_t>, V>;
    std::vector<std::unique_ptr<Entry>> entries_;
    Entry* last_ = nullptr;
    std::int64_t runs_ = 0;
};

// Lists of runs for one key, each made on first use: im2col's one per tap of one (geometry,
// tile shape, columns, layout), the tap runs' one per piece shape.
struct LaneRunLists {
    std::vector<std::vector<vec::LaneRun>> lists;
    std::vector<char> built;
};

// The `n` lists of `key` in `cache`.
LaneRunLists& find_lists(RunCache<LaneRunLists>& cache, const std::vector<std::int64_t>& key, std::size_t n) {
    bool fresh = false;
    LaneRunLists& l = cache.find(key, fresh);
    if (fresh) {
        l.lists.resize(n);
        l.built.assign(n, 0);
    }
    return l;
}

// List e of `l`, made by make(list) the first time.
template <class F>
const std::vector<vec::LaneRun>& list_of(RunCache<LaneRunLists>& cache, LaneRunLists& l, std::size_t e, F&& make) {
    if (!l.built[e]) {
        make(l.lists[e]);
        l.built[e] = 1;
        cache.added(static_cast<std::int64_t>(l.lists[e].size()));
    }
    return l.lists[e];
}

// Where the last axis has dilation 1, position j's last-axis taps [ka, kb) of outer tap ko
// read kb − ka consecutive input elements: a run that lands whole in colᵀ's row for j. One
// list per (ko, ka, kb) over tile columns [c0, c1), one run per column in order, at dst
// offsets cl.offset(c − c0), src as in list_segments (from the start of the row's channel
// plane in image 0).
void list_tap_runs(const Axes& ax, const ColTile& tile, std::int64_t ko, std::int64_t ka, std::int64_t kb, std::int64_t c0,
                   std::int64_t c1, const PanelLayout& cl, std::vector<vec::LaneRun>& out) {
    out.clear();
    const int L = ax.D - 1;
    std::int64_t k[kMaxD];
    ax.unravel(ko * ax.K[L], ax.K, k);  // the outer tap with last-axis tap 0
    const std::int64_t s = ax.s[L], XL = ax.X[L], image = ax.Ctot * ax.Xn, len = kb - ka;
    for_images(tile, c0, c1, [&](std::int64_t ni, std::int64_t q0, std::int64_t q1, std::int64_t c) {
        ax.for_runs(q0, q1, k, [&](std::int64_t at, std::int64_t n, bool ok, std::int64_t off, std::int64_t a0,
                                   std::int64_t kbase) {
            for (std::int64_t t = 0; t < n; ++t) {
                const std::int64_t x0 = (a0 + t) * s + kbase + ka;  // the input element of lane 0
                const std::int64_t lo = ok ? std::clamp<std::int64_t>(-x0, 0, len) : 0;
                const std::int64_t hi = ok ? std::clamp<std::int64_t>(XL - x0, lo, len) : 0;
                out.push_back({hi > lo ? ni * image + off + x0 + lo : 0, cl.offset(c + at + t - c0), len, lo, hi});
            }
        });
    });
}

// The geometry's part of a key: everything an Axes walk depends on.
void geometry_key(const Axes& ax, std::vector<std::int64_t>& key) {
    key.insert(key.end(), {ax.D, ax.Ctot});
    for (const std::int64_t* a : {ax.X, ax.Y, ax.K, ax.s, ax.d, ax.pb}) key.insert(key.end(), a, a + ax.D);
}

// col2im sums each vector of a plane from lane permutes of its taps' col vectors (one
// write, no runs: vec::permute_sum) where the tile holds whole images, the plane is at most
// kPermuteMaxVectors vectors, and the permutes are no more than the vector operations of
// the runs (a permute, a load and an add against a run's loop and its vectors; measured on
// 20 layers: planes of 4-144 elements 0.67-0.96 of the runs' time where the permutes were
// fewer, 1-D rows of 64-128 elements 1.00-1.07 where they were 2.3-5 times more).
constexpr std::int64_t kPermuteMaxVectors = 64;
// A run's fixed cost in vector operations (its loop, its tail): with 1, r6 of random_shapes.py
// 20261129 (48 -> 256, k3 s2, 14 × 14 -> 29 × 29: 126 runs of 13-15 floats, 421 permutes
// against 358) kept the runs, 1.5× slower than the permutes; with 2 the 1-D rows of 128
// (4 runs) still keep theirs.
constexpr std::int64_t kRunOps = 2;
// The forward's im2col gathers a panel's vectors from planes of at most kGatherMaxVectors
// vectors by lane permutes (vec::permute_copy) where they are no more than the runs' vector
// operations (each run's loop and vectors).
constexpr std::int64_t kGatherMaxVectors = 16;

// A run of col2im's scatter: plane[dst + e·s] = src[src + e] for e < len, s the last axis's
// stride.
struct ScatterRun {
    std::int64_t src, dst, len;
};
// s runs of the scatter on s consecutive positions (every phase of a row, s ≤
// vec::kInterleaveMaxWays): plane[dst + p + e·s] = src[src[p] + e] for p < s, e < len (one
// vec::interleave).
struct InterleaveRun {
    std::int64_t src[vec::kInterleaveMaxWays], dst, len;
};

// col2im's runs for one (geometry, tile positions, columns): every plane of the tile takes
// the same runs (tap, positions -> i-side positions), and the band of the phase-major plane
// they reach. Where the taps are disjoint (ConvGeometry::taps_disjoint), the runs of a
// scatter instead, in plane order, the two phases of a row paired where the stride is 2.
struct PlaneRuns {
    std::vector<vec::Run> runs;
    PhasePlane::Band band{};
    bool disjoint = false, cover = false;
    std::vector<ScatterRun> scatter;
    std::vector<InterleaveRun> interleaves;
    std::vector<vec::LanePermute> permutes;
};

// f(src, off, a, kbase, len) for every run of the tile's positions and a tap that lands in
// the plane: col offset src (from the tap's row), outer i-side offset off, and last-axis
// o-side positions a, .., a + len − 1, whose tap reads i-side positions (a + t)·s + kbase.
template <class F>
void for_plane_runs(const Axes& ax, const ColTile& tile, std::int64_t cols, F&& f) {
    std::int64_t k[kMaxD];
    for (std::int64_t kf = 0; kf < ax.Kn; ++kf) {
        ax.unravel(kf, ax.K, k);
        const Axes::Window win = ax.last_axis_window(ax.last_axis_base(k));
        ax.for_runs(tile.p0, tile.p1, k, [&](std::int64_t at, std::int64_t len, bool ok, std::int64_t off, std::int64_t a0,
                                             std::int64_t kbase) {
            if (!ok) return;
            std::int64_t lo, hi;
            win.clip(a0, len, lo, hi);
            if (lo < hi) f(kf * cols + at + lo, off, a0 + lo, kbase, hi - lo);
        });
    }
}

// The runs' copies, in a function of their own: inlined into col2im, its run pointer went to
// the stack (3-D k3 s3 rows of 4-5 elements 1.15× slower).
template <class T>
[[gnu::noinline]] void scatter(const std::vector<ScatterRun>& runs, const T* src, T* plane, std::int64_t sl) {
    for (const ScatterRun& r : runs) {
        const T* a = src + r.src;
        T* d = plane + r.dst;
        if (sl == 1) std::copy_n(a, r.len, d);
        else for (std::int64_t e = 0; e < r.len; ++e) d[e * sl] = a[e];
    }
}

void scatter_runs(const Axes& ax, const ColTile& tile, std::int64_t cols, PlaneRuns& pr) {
    const std::int64_t sl = ax.s[ax.D - 1];
    std::vector<ScatterRun> runs;
    for_plane_runs(ax, tile, cols, [&](std::int64_t src, std::int64_t off, std::int64_t a, std::int64_t kbase, std::int64_t len) {
        runs.push_back({src, off + a * sl + kbase, len});
    });
    std::sort(runs.begin(), runs.end(), [](const ScatterRun& a, const ScatterRun& b) { return a.dst < b.dst; });
    // The s runs that start on s consecutive positions (every phase of a row) make one
    // interleave of their common length where it is at least vec::kInterleaveMin; what is
    // left of the longer ones stays a run.
    for (std::size_t r = 0; r < runs.size();) {
        const std::size_t w = static_cast<std::size_t>(sl);
        bool group = sl >= 2 && sl <= vec::kInterleaveMaxWays && r + w <= runs.size();
        std::int64_t m = runs[r].len;
        for (std::size_t p = 1; group && p < w; ++p) {
            group = runs[r + p].dst == runs[r].dst + static_cast<std::int64_t>(p);
            m = std::min(m, runs[r + p].len);
        }
        if (!group || (sl > 2 && m < vec::kInterleaveMin)) {
            pr.scatter.push_back(runs[r++]);
            continue;
        }
        InterleaveRun g{{}, runs[r].dst, m};
        for (std::size_t p = 0; p < w; ++p) g.src[p] = runs[r + p].src;
        pr.interleaves.push_back(g);
        for (std::size_t p = 0; p < w; ++p) {
            const ScatterRun& u = runs[r + p];
            if (u.len > m) pr.scatter.push_back({u.src + m, u.dst + m * sl, u.len - m});
        }
        r += w;
    }
}

// A permute of the vector of `count` elements at offset src into result vector acc, no lanes yet.
vec::LanePermute new_permute(std::int64_t src, std::int64_t acc, std::int64_t count) {
    vec::LanePermute u{};
    u.src = src;
    u.acc = static_cast<std::int32_t>(acc);
    u.count = static_cast<std::int32_t>(count);
    std::fill(std::begin(u.idx), std::end(u.idx), -1);
    return u;
}
// Result lane `to` of u takes source lane `from` (elements of R 32-bit lanes).
void add_lane(vec::LanePermute& u, std::int64_t to, std::int64_t from, std::int64_t R) {
    for (std::int64_t r = 0; r < R; ++r) {
        u.idx[to * R + r] = static_cast<std::int32_t>(from * R + r);
        u.mask |= 1u << (to * R + r);
    }
}

// The lane permutes of col2im's planes, for a tile of whole images: every (result vector,
// tap, vector of the tap's col row) that meets, its lanes (vec::permute_sum), V elements a
// vector of 32-bit lanes of R each. Sorted by result vector, then tap: each result element
// sums its taps in the order the runs add them.
void permute_list(const Axes& ax, const ColTile& tile, std::int64_t cols, std::int64_t V, std::int64_t R,
                  std::vector<vec::LanePermute>& out) {
    struct Lane {
        std::int64_t acc, kf, v, to, from;
    };
    std::vector<Lane> lanes;
    const std::int64_t sl = ax.s[ax.D - 1], W = tile.width();
    for_plane_runs(ax, tile, cols, [&](std::int64_t src, std::int64_t off, std::int64_t a, std::int64_t kbase, std::int64_t len) {
        for (std::int64_t e = 0; e < len; ++e) {
            const std::int64_t kf = (src + e) / cols, j = (src + e) % cols, dst = off + (a + e) * sl + kbase;
            lanes.push_back({dst / V, kf, j / V, dst % V, j % V});
        }
    });
    std::stable_sort(lanes.begin(), lanes.end(), [](const Lane& x, const Lane& y) {
        return std::tie(x.acc, x.kf, x.v) < std::tie(y.acc, y.kf, y.v);
    });
    for (std::size_t l = 0; l < lanes.size(); ++l) {
        const Lane& z = lanes[l];
        if (l == 0 || z.acc != lanes[l - 1].acc || z.kf != lanes[l - 1].kf || z.v != lanes[l - 1].v)
            out.push_back(new_permute(z.kf * cols + z.v * V, z.acc, std::min(V, W - z.v * V)));
        add_lane(out.back(), z.to, z.from, R);
    }
}

PlaneRuns plane_runs(const ConvGeometry& g, const Axes& ax, const PhasePlane& pp, const ColTile& tile, std::int64_t cols,
                     std::int64_t vbytes, std::int64_t esize) {
    PlaneRuns pr;
    const std::int64_t V = vbytes / esize;
    if (tile.p0 == 0 && tile.p1 == g.out_numel() && ax.Xn <= kPermuteMaxVectors * V) {
        // The runs' vector operations (each run's own and kRunOps for its loop, and two passes
        // over the plane: zeros and the copy back from phase-major order) against one per
        // permute.
        std::int64_t ops = 2 * ((ax.Xn + V - 1) / V);
        for_plane_runs(ax, tile, cols, [&](std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t len) {
            ops += kRunOps + (len + V - 1) / V;
        });
        permute_list(ax, tile, cols, V, esize / 4, pr.permutes);
        if (static_cast<std::int64_t>(pr.permutes.size()) <= ops) return pr;
        pr.permutes.clear();
    }
    if (g.taps_disjoint()) {
        pr.disjoint = true;
        pr.cover = g.taps_cover();
        scatter_runs(ax, tile, cols, pr);
        return pr;
    }
    for_plane_runs(ax, tile, cols, [&](std::int64_t src, std::int64_t off, std::int64_t a, std::int64_t kbase, std::int64_t len) {
        pr.runs.push_back({src, off + pp.phase_index(a, kbase), len});
    });
    // The part of the plane the runs reach: a tile of part of an image reaches a band of rows
    // (and within one o-side row, a range of the last axis); only that band of the
    // phase-major copy is zeroed and added back.
    pr.band = pp.whole();
    if (!pp.identity) {
        std::int64_t lo = ax.Xn, hi = 0;
        for (const vec::Run& r : pr.runs) {
            lo = std::min(lo, r.dst);
            hi = std::max(hi, r.dst + r.len);
        }
        PhasePlane::Band& band = pr.band;
        band.r0 = lo / pp.XL;
        band.r1 = hi <= lo ? band.r0 : (hi - 1) / pp.XL + 1;
        const std::int64_t YL = pp.YL, L = ax.D - 1, s = pp.s;
        if (tile.p0 / YL == (tile.p1 - 1) / YL) {  // one o-side row: i-side positions it reaches, in whole phases
            const std::int64_t j0 = tile.p0 % YL, j1 = (tile.p1 - 1) % YL;
            const std::int64_t x0 = std::max<std::int64_t>(0, j0 * s - ax.pb[L]);
            const std::int64_t x1 = std::min(pp.XL, j1 * s + (ax.K[L] - 1) * ax.d[L] - ax.pb[L] + 1);
            band.x0 = x0 / s * s;
            band.x1 = std::min(pp.XL, std::max(band.x0, (x1 + s - 1) / s * s));
        }
    }
    return pr;
}

// im2col's lane permutes (the forward's planes of a few vectors): per tap and panel of the
// call's columns, the permutes that make each vector of the panel's row from a channel's
// plane (vec::permute_copy), or none where the runs are cheaper.
struct GatherLists {
    bool use = false;
    std::vector<std::vector<vec::LanePermute>> lists;  // tap kf, panel p: lists[kf·panels + p]
};

// Appends one tap's lists, one per panel, from its runs `segs` (list_segments, columns
// in layout cl: panels of whole vectors of V elements, R 32-bit lanes each): each element a
// run takes from the input becomes a lane of the permute from its plane vector (of image ni,
// at offset ni·image + v·V) into its panel vector; lanes no run takes are zeros.
void gather_lists(const Axes& ax, const std::vector<vec::LaneRun>& segs, const PanelLayout& cl, std::int64_t panels,
                  std::int64_t V, std::int64_t R, std::vector<std::vector<vec::LanePermute>>& out) {
    struct Lane {
        std::int64_t panel, acc, src, count, to, from;
    };
    std::vector<Lane> lanes;
    const std::int64_t sl = ax.s[ax.D - 1], image = ax.Ctot * ax.Xn;
    for (const vec::LaneRun& u : segs)
        for (std::int64_t e = u.lo; e < u.hi; ++e) {
            const std::int64_t d = u.dst + e, s = u.src + (e - u.lo) * sl;
            const std::int64_t j = d % cl.panel_stride, pos = s % image, v0 = pos / V * V;
            lanes.push_back({d / cl.panel_stride, j / V, s - pos + v0, std::min(V, ax.Xn - v0), j % V, pos % V});
        }
    std::stable_sort(lanes.begin(), lanes.end(), [](const Lane& x, const Lane& y) {
        return std::tie(x.panel, x.acc, x.src) < std::tie(y.panel, y.acc, y.src);
    });
    const std::size_t first = out.size();
    out.resize(first + static_cast<std::size_t>(panels));
    for (std::size_t l = 0; l < lanes.size(); ++l) {
        const Lane& z = lanes[l];
        std::vector<vec::LanePermute>& list = out[first + static_cast<std::size_t>(z.panel)];
        if (l == 0 || z.panel != lanes[l - 1].panel || z.acc != lanes[l - 1].acc || z.src != lanes[l - 1].src)
            list.push_back(new_permute(z.src, z.acc, z.count));
        add_lane(list.back(), z.to, z.from, R);
    }
}

// Everything list_segments' result depends on.
void list_key(const Axes& ax, const ColTile& tile, std::int64_t c0, std::int64_t c1, const PanelLayout& cl,
              std::vector<std::int64_t>& key) {
    key.assign({tile.nb, tile.p0, tile.p1, c0, c1, cl.ld, cl.panel, cl.panel_stride});
    geometry_key(ax, key);
}

// The gather lists of tile columns [c0, c1) in layout `cols` at the active instruction set,
// made once per thread and kept (from segs_of(kf), tap kf's runs); null where im2col copies
// the runs instead: columns not in panels of whole vectors, planes over kGatherMaxVectors
// vectors, or more permutes than the runs' vector operations.
template <class T, class F>
const GatherLists* find_gathers(const Axes& ax, const ColTile& tile, std::int64_t c0, std::int64_t c1,
                                const PanelLayout& cols, F&& segs_of) {
    const std::int64_t vbytes = vec::active_kernels<T>().permute_bytes, V = vbytes / static_cast<std::int64_t>(sizeof(T));
    if (cols.ld != 1 || cols.panel == 0 || cols.panel % V != 0 || ax.Xn > kGatherMaxVectors * V) return nullptr;
    thread_local RunCache<GatherLists> cache;
    thread_local std::vector<std::int64_t> key;
    list_key(ax, tile, c0, c1, cols, key);
    key.push_back(vbytes);
    bool fresh = false;
    GatherLists& gl = cache.find(key, fresh);
    if (fresh) {
        const std::int64_t panels = (c1 - c0 + cols.panel - 1) / cols.panel;
        std::int64_t ops = 0, perms = 0;
        for (std::int64_t kf = 0; kf < ax.Kn; ++kf) {
            const std::vector<vec::LaneRun>& segs = segs_of(kf);
            for (const vec::LaneRun& u : segs) ops += 1 + (u.len + V - 1) / V;
            gather_lists(ax, segs, cols, panels, V, static_cast<std::int64_t>(sizeof(T)) / 4, gl.lists);
        }
        for (const std::vector<vec::LanePermute>& l : gl.lists) perms += static_cast<std::int64_t>(l.size());
        gl.use = perms <= ops;
        if (!gl.use) gl.lists.clear();
        cache.added(perms);
    }
    return gl.use ? &gl : nullptr;
}

}  // namespace

// The transposing im2col fills rows of enough channels at a time that each run it decides is
// replayed for about kChunkFloats elements, in at most kPlainFloats (256 KiB of f32), before
// the transpose.
constexpr std::int64_t kChunkFloats = 64, kPlainFloats = std::int64_t{1} << 16;
// The weight gradient's colᵀ and the forward's col take each position's last-axis taps as one
// run (list_tap_runs) where that axis has dilation 1, a stride of at least kTapRunMinStride
// (below it the plain rows' copies are vectors) and at least kTapRunMinTaps taps
// (audio1d_k16s8's weight gradient 34.6 -> 30.9 ms, AVX2 49.7 -> 47.9; k8 s4 1-D layers
// 0.94-1.02; 4 taps went both ways, 0.94-1.06: a run's fixed cost).
constexpr std::int64_t kTapRunMinStride = 3, kTapRunMinTaps = 8;

// Rows of n elements filled before a transpose are laid one cache line longer: rows that lie
// a multiple of 4 KiB apart (n = 256, ∏K = 16: a tap's rows, ∏K rows apart) had their stores
// all fall in one L1 set.
template <class T>
std::int64_t plain_ld(std::int64_t n) {
    return n + 64 / static_cast<std::int64_t>(sizeof(T));
}
// The rows filled there, per thread, kept between calls.
template <class T>
T* plain_rows(std::int64_t elems) {
    thread_local Buffer<T> plain;
    if (plain.size() < elems) plain = Buffer<T>(elems);
    return plain.data();
}

template <class T>
void im2col_ncx(const ConvGeometry& g, const T* x, const ColTile& tile, std::int64_t group, std::int64_t r0,
                std::int64_t r1, std::int64_t c0, std::int64_t c1, T* dst, const PanelLayout& rows,
                const PanelLayout& cols) {
    const vec::Kernels<T>& vk = vec::active_kernels<T>();
    const Axes ax(g);
    const std::int64_t sl = ax.s[ax.D - 1];
    // Rows of the GEMM's B panels (the forward: col's rows contiguous), or columns of them
    // (the weight gradient's colᵀ: col's rows become panel columns), made as plain rows and
    // transposed a panel at a time.
    const bool transposing = cols.ld != 1;
    auto plane = [&](std::int64_t i) { return x + (tile.n0 * ax.Ctot + group * g.Ig + i) * ax.Xn; };
    const std::int64_t KL = ax.K[ax.D - 1];
    if (ax.d[ax.D - 1] == 1 && sl >= kTapRunMinStride && KL >= kTapRunMinTaps &&
        (transposing ? rows.ld == 1 && rows.panel > 0 : cols.ld == 1 && cols.panel > 0 && rows.panel == 0)) {
        // Each position takes its taps' runs straight from the input, one list per piece
        // shape (outer tap, last-axis taps) replayed for every channel and panel: the weight
        // gradient's colᵀ panel rows directly; the forward's panels through position-major
        // rows of each panel's columns (plain rows of the call's rows), transposed. Where a
        // column's run lands: colᵀ's row, or the column's plain row.
        const std::int64_t ld = plain_ld<T>(r1 - r0);
        const PanelLayout tl_cols = transposing ? cols : PanelLayout{ld, cols.panel};
        thread_local RunCache<LaneRunLists> tcache;
        thread_local std::vector<std::int64_t> tkey;
        list_key(ax, tile, c0, c1, tl_cols, tkey);
        LaneRunLists& tl = find_lists(tcache, tkey, static_cast<std::size_t>(ax.Kn / KL * (KL + 1) * (KL + 1)));
        // Rows [r0, r1) (r = i·∏K + kf, in panels of `rp` rows at d + rl.offset) of columns
        // [ca, cb), where ca − c0 is a multiple of tl_cols' panel (their runs then start at d).
        auto fill_taps = [&](std::int64_t ca, std::int64_t cb, T* d, const PanelLayout& rl, std::int64_t rp) {
            // Rows [r, r + kb − ka) at pd (the panel of row p0), taps [ka, kb) of outer tap ko,
            // for `count` channels from r's, ∏K rows apart.
            auto copy = [&](T* pd, std::int64_t p0, std::int64_t r, std::int64_t ko, std::int64_t ka, std::int64_t kb,
                            std::int64_t count) {
                const std::size_t e = static_cast<std::size_t>((ko * (KL + 1) + ka) * (KL + 1) + kb);
                const std::vector<vec::LaneRun>& runs = list_of(tcache, tl, e, [&](std::vector<vec::LaneRun>& out) {
                    list_tap_runs(ax, tile, ko, ka, kb, c0, c1, tl_cols, out);
                });
                vk.copy_runs(runs.data() + (ca - c0), cb - ca, plane(r / ax.Kn), 1, pd + (r - p0), count, ax.Xn, ax.Kn);
            };
            for (std::int64_t p0 = r0; p0 < r1; p0 += rp) {
                T* const pd = d + rl.offset(p0 - r0);
                const std::int64_t p1 = std::min(r1, p0 + rp);
                for (std::int64_t r = p0; r < p1;) {
                    const std::int64_t whole = r % ax.Kn == 0 ? (p1 - r) / ax.Kn : 0;  // whole channels from r on
                    if (whole > 0) {
                        for (std::int64_t ko = 0; ko < ax.Kn / KL; ++ko) copy(pd, p0, r + ko * KL, ko, 0, KL, whole);
                        r += whole * ax.Kn;
                        continue;
                    }
                    const std::int64_t kf = r % ax.Kn, ko = kf / KL, ka = kf % KL, kb = std::min(KL, ka + (p1 - r));
                    copy(pd, p0, r, ko, ka, kb, 1);
                    r += kb - ka;
                }
            }
        };
        if (transposing) return fill_taps(c0, c1, dst, rows, rows.panel);
        // The forward: a panel's columns as position-major rows, then transposed into the
        // panel (audio1d_k16s8's forward 34.2 -> 31.7 ms at 1 thread, 17.2 -> 15.6 at 2).
        T* const block = plain_rows<T>(cols.panel * ld);
        for (std::int64_t ca = c0; ca < c1; ca += cols.panel) {
            const std::int64_t cb = std::min(c1, ca + cols.panel);
            fill_taps(ca, cb, block, PanelLayout{1}, r1 - r0);
            vk.transpose(block, ld, cb - ca, r1 - r0, dst + cols.offset(ca - c0), rows.ld);
        }
        return;
    }
    // Rows r = i·∏K + kf: each tap's runs are listed once (and kept, see RunCache), then
    // replayed for each channel.
    const PanelLayout cl = transposing ? PanelLayout{1} : cols;
    thread_local RunCache<LaneRunLists> cache;
    thread_local std::vector<std::int64_t> key;
    list_key(ax, tile, c0, c1, cl, key);
    LaneRunLists& lists = find_lists(cache, key, static_cast<std::size_t>(ax.Kn));
    auto runs_of = [&](std::int64_t kf) -> const std::vector<vec::LaneRun>& {  // tap kf's runs
        return list_of(cache, lists, static_cast<std::size_t>(kf),
                       [&](std::vector<vec::LaneRun>& out) { list_segments(ax, tile, kf, c0, c1, cl, out); });
    };
    // Rows [q0, q1) to d + rl.offset(r − q0): each tap's runs, replayed for its channels.
    auto fill = [&](std::int64_t q0, std::int64_t q1, T* d, const PanelLayout& rl) {
        for (std::int64_t l = 0; l < std::min(ax.Kn, q1 - q0); ++l) {
            const std::int64_t r = q0 + l;
            const std::vector<vec::LaneRun>& segs = runs_of(r % ax.Kn);
            vk.copy_runs(segs.data(), static_cast<std::int64_t>(segs.size()), plane(r / ax.Kn), sl, d + rl.offset(l),
                         (q1 - r + ax.Kn - 1) / ax.Kn, ax.Xn, ax.Kn * rl.ld);
        }
    };
    if (!transposing) {
        // Planes of a few vectors, columns in panels of whole vectors: each vector of a row's
        // panel gathered from the plane's vectors by lane permutes, where they are no more
        // than the runs' vector operations.
        if (const GatherLists* gl = rows.panel == 0 ? find_gathers<T>(ax, tile, c0, c1, cols, runs_of) : nullptr) {
            const std::int64_t n = c1 - c0, panels = (n + cols.panel - 1) / cols.panel;
            for (std::int64_t l = 0; l < std::min(ax.Kn, r1 - r0); ++l) {
                const std::int64_t r = r0 + l, count = (r1 - r + ax.Kn - 1) / ax.Kn;
                for (std::int64_t p = 0; p < panels; ++p) {
                    const std::vector<vec::LanePermute>& list = gl->lists[static_cast<std::size_t>(r % ax.Kn * panels + p)];
                    vk.permute_copy(list.data(), static_cast<std::int64_t>(list.size()), plane(r / ax.Kn), ax.Xn,
                                    dst + rows.offset(l) + p * cols.panel_stride, ax.Kn * rows.ld,
                                    std::min(cols.panel, n - p * cols.panel), count);
                }
            }
            return;
        }
        return fill(r0, r1, dst, rows);
    }
    // Rows of several panels at a time, filled the same way (each tap's runs replayed for the
    // chunk's channels: a panel alone, 32 rows, holds one or two channels of a tap, so a
    // short run was decided again for every row), then transposed a panel at a time.
    const std::int64_t n = c1 - c0, width = rows.panel;
    const std::int64_t ld = plain_ld<T>(n);
    const std::int64_t runs = std::max<std::int64_t>(1, static_cast<std::int64_t>(runs_of(r0 % ax.Kn).size()));
    const std::int64_t channels = (kChunkFloats * runs + n - 1) / n;  // n / runs: a run's mean length
    const std::int64_t chunk =
        std::clamp((channels * ax.Kn + width - 1) / width, std::int64_t{1}, std::max<std::int64_t>(1, kPlainFloats / (width * ld))) *
        width;
    T* const plain = plain_rows<T>(chunk * ld);
    for (std::int64_t q0 = r0; q0 < r1; q0 += chunk) {
        const std::int64_t q1 = std::min(r1, q0 + chunk);
        fill(q0, q1, plain, PanelLayout{ld});
        for (std::int64_t p0 = q0; p0 < q1; p0 += width)
            vk.transpose(plain + (p0 - q0) * ld, ld, std::min(q1, p0 + width) - p0, n, dst + rows.offset(p0 - r0), cols.ld);
    }
}

template <class T>
void im2col_nxc(const ConvGeometry& g, const T* x, const ColTile& tile, std::int64_t group, std::int64_t c0,
                std::int64_t c1, T* col) {
    const Axes ax(g);
    const std::int64_t Ig = g.Ig, R = g.R();
    // One row per position, ∏K runs of Ig contiguous channels.
    for_images(tile, c0, c1, [&](std::int64_t ni, std::int64_t q0, std::int64_t q1, std::int64_t at0) {
        const T* xn = x + (tile.n0 + ni) * ax.Xn * ax.Ctot + group * Ig;
        for (std::int64_t j = q0; j < q1; ++j) {
            T* const row = col + (at0 + j - q0) * R;
            ax.for_taps(j, [&](std::int64_t kf, std::int64_t off) {
                T* dst = row + kf * Ig;
                if (off >= 0) std::memcpy(dst, xn + off, static_cast<std::size_t>(Ig) * sizeof(T));
                else std::fill_n(dst, Ig, T(0));
            });
        }
    });
}

namespace {

// col2im's runs of the tile's planes (NCX) at the active instruction set, made once per
// thread and kept (RunCache).
template <class T>
const PlaneRuns& cached_plane_runs(const ConvGeometry& g, const Axes& ax, const PhasePlane& pp, const ColTile& tile) {
    thread_local RunCache<PlaneRuns> cache;
    thread_local std::vector<std::int64_t> key;
    const std::int64_t vbytes = vec::active_kernels<T>().permute_bytes;
    key.assign({tile.p0, tile.p1, tile.cols(), vbytes});
    geometry_key(ax, key);
    bool fresh = false;
    PlaneRuns& pr = cache.find(key, fresh);
    if (fresh) {
        pr = plane_runs(g, ax, pp, tile, tile.cols(), vbytes, sizeof(T));
        cache.added(static_cast<std::int64_t>(pr.runs.size() + pr.scatter.size() + pr.interleaves.size() + pr.permutes.size()));
    }
    return pr;
}

}  // namespace

template <class T>
bool im2col_gathers(const ConvGeometry& g, const ColTile& tile, std::int64_t c0, std::int64_t c1, const PanelLayout& cols) {
    const Axes ax(g);
    std::vector<vec::LaneRun> segs;
    auto segs_of = [&](std::int64_t kf) -> const std::vector<vec::LaneRun>& {
        list_segments(ax, tile, kf, c0, c1, cols, segs);
        return segs;
    };
    return g.layout == Layout::NCX && find_gathers<T>(ax, tile, c0, c1, cols, segs_of) != nullptr;
}

template <class T>
bool col2im_permutes(const ConvGeometry& g, const ColTile& tile) {
    const Axes ax(g);
    return g.layout == Layout::NCX && !cached_plane_runs<T>(g, ax, PhasePlane(ax), tile).permutes.empty();
}

template <class T>
void col2im(const ConvGeometry& g, const T* col, const ColTile& tile, std::int64_t group, std::int64_t ni0,
            std::int64_t ni1, std::int64_t i0, std::int64_t i1, T* x) {
    const vec::Kernels<T>& vk = vec::active_kernels<T>();
    const Axes ax(g);
    const std::int64_t Ig = g.Ig, R = g.R(), cols = tile.cols(), W = tile.width();
    if (g.layout == Layout::NCX) {
        // Every plane takes the same runs (tap, positions -> i-side positions), listed once
        // per thread and kept (RunCache); with a last-axis stride they land in a phase-major
        // copy of the plane as contiguous runs, which is added back into the plane in natural
        // order at the end. A tile of whole images is the only one that reaches its planes:
        // it writes them whole instead (zeros where no tap lands), so the result needs no
        // zero fill (the plan's writes_all). Disjoint taps reach each position at most once:
        // col2im writes those positions straight from col (zeros first around them in a tile
        // of whole images, unless the taps cover the plane).
        // Small planes of whole images instead sum each vector from lane permutes of col and
        // write it once.
        const PhasePlane pp(ax);
        const PlaneRuns& pr = cached_plane_runs<T>(g, ax, pp, tile);
        if (!pr.permutes.empty()) {
            for (std::int64_t ni = ni0; ni < ni1; ++ni)
                vk.permute_sum(pr.permutes.data(), static_cast<std::int64_t>(pr.permutes.size()), col + ni * W,
                               ax.Kn * cols, x + ((tile.n0 + ni) * ax.Ctot + group * Ig + i0) * ax.Xn, ax.Xn, ax.Xn,
                               i1 - i0);
            return;
        }
        const std::vector<vec::Run>& runs = pr.runs;
        const bool whole = tile.p0 == 0 && tile.p1 == g.out_numel();
        if (pr.disjoint) {
            const std::int64_t sl = pp.s;
            for (std::int64_t ni = ni0; ni < ni1; ++ni)
                for (std::int64_t i = i0; i < i1; ++i) {
                    T* xc = x + ((tile.n0 + ni) * ax.Ctot + group * Ig + i) * ax.Xn;
                    const T* src = col + (i - i0) * ax.Kn * cols + ni * W;
                    if (whole && !pr.cover) std::fill_n(xc, ax.Xn, T(0));
                    for (const InterleaveRun& r : pr.interleaves) {
                        const T* ph[vec::kInterleaveMaxWays];
                        for (std::int64_t p = 0; p < sl; ++p) ph[p] = src + r.src[p];
                        vk.interleave(r.len, sl, ph, xc + r.dst, false);
                    }
                    scatter(pr.scatter, src, xc, sl);
                }
            return;
        }
        const PhasePlane::Band band = whole ? pp.whole() : pr.band;
        Buffer<T> pm(pp.identity ? 0 : ax.Xn);
        for (std::int64_t ni = ni0; ni < ni1; ++ni)
            for (std::int64_t i = i0; i < i1; ++i) {
                T* xc = x + ((tile.n0 + ni) * ax.Ctot + group * Ig + i) * ax.Xn;
                const T* src = col + (i - i0) * ax.Kn * cols + ni * W;
                if (pp.identity) {
                    if (whole) std::fill_n(xc, ax.Xn, T(0));
                    vk.add_runs(runs.data(), static_cast<std::int64_t>(runs.size()), src, xc);
                    continue;
                }
                pp.zero(pm.data(), band);
                vk.add_runs(runs.data(), static_cast<std::int64_t>(runs.size()), src, pm.data());
                pp.from_phase_major(pm.data(), xc, !whole, band);
            }
        return;
    }
    for (std::int64_t ni = ni0; ni < ni1; ++ni) {
        T* xn = x + (tile.n0 + ni) * ax.Xn * ax.Ctot + group * Ig;
        for (std::int64_t j = tile.p0; j < tile.p1; ++j) {
            const T* const row = col + (ni * W + (j - tile.p0)) * R;
            ax.for_taps(j, [&](std::int64_t kf, std::int64_t off) {
                if (off >= 0) vk.axpy(i1 - i0, T(1), row + kf * Ig + i0, xn + off + i0);
            });
        }
    }
}

template void im2col_nxc<float>(const ConvGeometry&, const float*, const ColTile&, std::int64_t, std::int64_t, std::int64_t,
                            float*);
template void im2col_nxc<double>(const ConvGeometry&, const double*, const ColTile&, std::int64_t, std::int64_t,
                             std::int64_t, double*);
template void im2col_ncx<float>(const ConvGeometry&, const float*, const ColTile&, std::int64_t, std::int64_t,
                                std::int64_t, std::int64_t, std::int64_t, float*, const PanelLayout&, const PanelLayout&);
template void im2col_ncx<double>(const ConvGeometry&, const double*, const ColTile&, std::int64_t, std::int64_t,
                                 std::int64_t, std::int64_t, std::int64_t, double*, const PanelLayout&,
                                 const PanelLayout&);
template bool im2col_gathers<float>(const ConvGeometry&, const ColTile&, std::int64_t, std::int64_t, const PanelLayout&);
template bool im2col_gathers<double>(const ConvGeometry&, const ColTile&, std::int64_t, std::int64_t, const PanelLayout&);
template bool col2im_permutes<float>(const ConvGeometry&, const ColTile&);
template bool col2im_permutes<double>(const ConvGeometry&, const ColTile&);
template void col2im<float>(const ConvGeometry&, const float*, const ColTile&, std::int64_t, std::int64_t, std::int64_t,
                            std::int64_t, std::int64_t, float*);
template void col2im<double>(const ConvGeometry&, const double*, const ColTile&, std::int64_t, std::int64_t,
                             std::int64_t, std::int64_t, std::int64_t, double*);

}  // namespace tg
