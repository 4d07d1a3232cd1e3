// Max pooling's forward kernel on planes (the ops behind ag::max_pool and nn::MaxPool).
//
// For each output position: the largest value of its window and its flat position in the
// input plane, taking the window in order (kernel axis 0 slowest) and keeping the first of
// equal values; a NaN beats every number and the first NaN is kept; positions in the padding
// never compete. 2-D pooling runs on the vector kernels of the active instruction set
// (tapegrad/ops/pool_kernels.hpp) and gives the same values and indices at every set.
#pragma once
#include <cstdint>

#include "tapegrad/ops/conv_geometry.hpp"

namespace tg {

// y [planes, OH, OW] and idx (positions in the [H, W] input plane) from x [planes, H, W],
// planes = g.N·g.G, NCX. Every window must hold at least one input position (checked by
// the caller); plane sizes below 2^31.
template <class T>
void max_pool_2d(const ConvGeometry& g, const T* x, T* y, std::int64_t* idx);

}  // namespace tg
