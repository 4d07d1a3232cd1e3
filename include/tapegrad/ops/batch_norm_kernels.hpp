// The table of batch normalisation's per-channel loops (tapegrad/ops/batch_norm.hpp), one per
// instruction set and element type: the same loops (tapegrad/ops/batch_norm_kernel.hpp)
// compiled for AVX2 (ops/batch_norm.avx2.cpp), AVX-512 (ops/batch_norm.avx512.cpp) and the
// base set (ops/batch_norm.cpp, Isa::scalar), reached through simd::Dispatch. The compiler
// vectorises them for each set; sums over a run are in the order its vectors give, so the
// last bits depend on the instruction set (never on the thread count).
#pragma once
#include <cstdint>

#include "tapegrad/core/simd.hpp"

namespace tg::simd_bn {

// An input [N, C, X...] read as [N, C, S] with S = ∏X.
struct Ncs {
    std::int64_t N, C, S;
};

template <class T>
struct Kernels {
    void (*moments)(const T* x, Ncs d, double* mean, double* var);
    // [relu]: without and with the fused ReLU
    void (*affine[2])(const T* x, Ncs d, const double* scale, const double* shift, const double* center, T* y);
    void (*sums[2])(const T* g, const T* x, const T* r, Ncs d, const double* center, double* sg, double* sgx);
    void (*input_grad[2])(const T* g, const T* x, const T* r, Ncs d, const double* mean, const double* invstd,
                          const double* weight, const double* sum_g, const double* sum_gxhat, T* dx);
};

extern const Kernels<float> f32_scalar, f32_avx2, f32_avx512;
extern const Kernels<double> f64_scalar, f64_avx2, f64_avx512;

}  // namespace tg::simd_bn
