// Private to ops/: a per-channel bias and a following ReLU, added in place in one pass
// (ops/bias.cpp), for the kernels whose results take them (the convolutions, tg::linear).
#pragma once
#include <cstdint>

#include "tapegrad/ops/conv_geometry.hpp"

namespace tg::detail {

// out[n, c, p] += bias[c] (bias may be null: nothing added), then with `relu` relu of it,
// in one pass over `images` whole results of C channels and P positions each (NXC: the
// channels innermost; a matrix [N, C] is N images of one position). The ReLU is fn::Relu's
// (v < 0 becomes 0; NaN and −0 pass), so the pass gives the same bits as adding the bias
// and then calling tg::relu.
template <class T>
void add_bias(T* out, const T* bias, std::int64_t images, std::int64_t C, std::int64_t P, Layout layout, bool relu = false);

}  // namespace tg::detail
