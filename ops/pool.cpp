#include "tapegrad/ops/pool.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include <omp.h>

#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/pool_kernels.hpp"

namespace tg {

namespace simd_pool {
namespace {

// Isa::scalar: for each output row, each kernel position in window order updates the row's
// running maxima (outputs [lo, hi) read inside the input).
template <class T>
void max_pool_2d_scalar(const Pool2d& p, const T* x, T* y, std::int64_t* idx, std::int64_t planes, T*) {
    std::vector<std::int64_t> at(static_cast<std::size_t>(p.OW));
    for (std::int64_t pl = 0; pl < planes; ++pl) {
        const T* xp = x + pl * p.H * p.W;
        for (std::int64_t oy = 0; oy < p.OH; ++oy) {
            T* best = y + (pl * p.OH + oy) * p.OW;
            std::fill(best, best + p.OW, -std::numeric_limits<T>::infinity());
            std::fill(at.begin(), at.end(), std::int64_t{-1});
            for (std::int64_t ky = 0; ky < p.KH; ++ky) {
                const std::int64_t iy = oy * p.SH + ky * p.DH - p.PH;
                if (iy < 0 || iy >= p.H) continue;
                for (std::int64_t kx = 0; kx < p.KW; ++kx) {
                    const std::int64_t off = kx * p.DW - p.PW;
                    const std::int64_t lo = std::max<std::int64_t>(0, ceil_div(-off, p.SW));
                    const std::int64_t hi = std::min(p.OW, floor_div(p.W - 1 - off, p.SW) + 1);
                    for (std::int64_t ox = lo; ox < hi; ++ox) {
                        const std::int64_t pos = iy * p.W + ox * p.SW + off;
                        const T v = xp[pos], b = best[ox];
                        std::int64_t& a = at[static_cast<std::size_t>(ox)];
                        // nothing taken yet, or larger, or a NaN over a number
                        if (a < 0 || v > b || (v != v && b == b)) {
                            best[ox] = v;
                            a = pos;
                        }
                    }
                }
            }
            std::copy(at.begin(), at.end(), idx + (pl * p.OH + oy) * p.OW);
        }
    }
}

}  // namespace

const Kernels<float> f32_scalar = {&max_pool_2d_scalar<float>};
const Kernels<double> f64_scalar = {&max_pool_2d_scalar<double>};

}  // namespace simd_pool

template <class T>
void max_pool_2d(const ConvGeometry& g, const T* x, T* y, std::int64_t* idx) {
    static const simd::TypedDispatch<simd_pool::Kernels> d{{simd_pool::f32_scalar, simd_pool::f32_avx2, simd_pool::f32_avx512},
                                                            {simd_pool::f64_scalar, simd_pool::f64_avx2, simd_pool::f64_avx512}};
    const simd_pool::Kernels<T>& k = d.active<T>();
    const simd_pool::Pool2d p{g.in_size[0], g.in_size[1], g.out_size[0], g.out_size[1], g.kernel[0], g.kernel[1],
                              g.stride[0],  g.stride[1],  g.dilation[0], g.dilation[1], g.pad_begin[0], g.pad_begin[1]};
    const std::int64_t planes = g.N * g.G, in = p.H * p.W, out = p.OH * p.OW;
    // A team only for a memory-bound pass worth one (kTeamMinValues window visits); each
    // thread takes a range of whole planes.
    const int nt = std::max<int>(1, std::min<std::int64_t>(team_size(static_cast<double>(planes * out * p.KH * p.KW), kTeamMinValues), planes));
    const simd_pool::Stage st(p);
    Buffer<T> stage(nt * st.elems);  // allocated here: nothing inside the team can fail
    if (nt == 1) {
        k.max_pool_2d(p, x, y, idx, planes, stage.data());
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num(), T_ = omp_get_num_threads();
        const std::int64_t p0 = planes * t / T_, p1 = planes * (t + 1) / T_;
        if (p1 > p0) k.max_pool_2d(p, x + p0 * in, y + p0 * out, idx + p0 * out, p1 - p0, stage.data() + t * st.elems);
    }
}

template void max_pool_2d<float>(const ConvGeometry&, const float*, float*, std::int64_t*);
template void max_pool_2d<double>(const ConvGeometry&, const double*, double*, std::int64_t*);

}  // namespace tg
