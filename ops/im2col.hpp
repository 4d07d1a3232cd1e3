// N-d im2col / col2im for one group over a tile of images and patch positions.
//
// A tile is images [n0, n0+nb) and o-side positions [p0, p1) (flattened C-order over
// out_size); a multi-image tile always spans whole images. Column c of the tile is
// ni·(p1−p0) + (j−p0). Row r indexes the reduction (i, k):
//   NCX: col is [R × cols], r = i·∏K + k (channel slow), so each row is a strided
//        gather from one input channel.
//   NXC: col is [cols × R], r = k·Ig + i (channel fast), so each (position, tap) copies
//        one contiguous run of Ig channels.
// Reads outside the input are zeros; col2im drops writes outside it, which is what crops
// by pads_begin and leaves the output_padding tail at zero.
// col2im accumulates (+=) into `x`, in a fixed order whatever the thread count.
#pragma once
#include <cstdint>

#include "ops/conv_geometry.hpp"

namespace tg {

template <class T>
void im2col(const ConvGeometry& g, const T* x, std::int64_t n0, std::int64_t nb, std::int64_t group, std::int64_t p0,
            std::int64_t p1, T* col);

template <class T>
void col2im(const ConvGeometry& g, const T* col, std::int64_t n0, std::int64_t nb, std::int64_t group,
            std::int64_t p0, std::int64_t p1, T* x);

}  // namespace tg
