// N-d im2col / col2im for one group over a tile of images and patch positions.
//
// A tile is images [n0, n0+nb) and o-side positions [p0, p1) (flattened C-order over
// out_size); a multi-image tile always spans whole images. Column c of the tile is
// ni·(p1−p0) + (j−p0). Row r indexes the reduction (i, k):
//   NCX: col is [R × cols], r = i·∏K + k (channel slow), so each row is a strided
//        gather from one input channel. The kernels never build it whole: im2col_ncx
//        writes any block of it straight into the GEMM's packed panels.
//   NXC: col is [cols × R], r = k·Ig + i (channel fast), so each (position, tap) copies
//        one contiguous run of Ig channels (im2col_nxc).
// Reads outside the input are zeros; col2im drops writes outside it, which is what crops
// by pads_begin and leaves the output_padding tail at zero.
// Both are serial: the kernels split the work between threads so that no two threads
// ever write the same element (columns for im2col; images and channels for col2im).
#pragma once
#include <cstdint>

#include <vector>

#include "tapegrad/ops/conv_geometry.hpp"
#include "tapegrad/ops/vec.hpp"

namespace tg {

struct ColTile {
    std::int64_t n0, nb, p0, p1;
    std::int64_t width() const { return p1 - p0; }
    std::int64_t cols() const { return nb * (p1 - p0); }
};

// NXC only: fills columns [c0, c1) of the tile's col buffer.
template <class T>
void im2col_nxc(const ConvGeometry& g, const T* x, const ColTile& tile, std::int64_t group, std::int64_t c0,
                std::int64_t c1, T* col);

// Where index `rel` of one dimension of a destination matrix lives: rel·ld, or in panels
// of `panel` indices (the GEMM's packed layout), (rel / panel)·panel_stride + (rel mod panel)·ld.
struct PanelLayout {
    std::int64_t ld, panel = 0, panel_stride = 0;
    std::int64_t offset(std::int64_t rel) const { return panel ? rel / panel * panel_stride + rel % panel * ld : rel * ld; }
};

// NCX only: rows [r0, r1) × columns [c0, c1) of the tile's col matrix, element (r, c) written
// to dst[rows.offset(r − r0) + cols.offset(c − c0)], so that a GEMM can pack op(B) or op(B)ᵀ
// straight from the input. Each tap's runs (which input positions land in which columns)
// are listed once per thread and kept for later calls with the same geometry, tile shape,
// columns and layout (a training loop asks for the same ones every step), at most about
// 10 MiB of them per thread.
template <class T>
void im2col_ncx(const ConvGeometry& g, const T* x, const ColTile& tile, std::int64_t group, std::int64_t r0,
                std::int64_t r1, std::int64_t c0, std::int64_t c1, T* dst, const PanelLayout& rows,
                const PanelLayout& cols);

// Adds the columns of images [ni0, ni1) of the tile into channels [i0, i1) of the group.
// NCX: `col` holds the rows of those channels only, channel i's at (i − i0)·∏K·cols; NXC:
// `col` is the tile's whole [cols × R] buffer. Sums run in a fixed order (taps, then
// positions), whatever the split.
template <class T>
void col2im(const ConvGeometry& g, const T* col, const ColTile& tile, std::int64_t group, std::int64_t ni0,
            std::int64_t ni1, std::int64_t i0, std::int64_t i1, T* x);

// Whether im2col_ncx gathers the forward's columns [c0, c1) of the tile, laid out as `cols`,
// by lane permutes of the input's planes (planes of a few vectors, columns in panels of whole
// vectors, at the active instruction set; see ops/im2col.cpp).
template <class T>
bool im2col_gathers(const ConvGeometry& g, const ColTile& tile, std::int64_t c0, std::int64_t c1, const PanelLayout& cols);

// Whether col2im sums the tile's planes from lane permutes of col (NCX, a tile of whole
// images of small planes, at the active instruction set; see ops/im2col.cpp).
template <class T>
bool col2im_permutes(const ConvGeometry& g, const ColTile& tile);

}  // namespace tg
