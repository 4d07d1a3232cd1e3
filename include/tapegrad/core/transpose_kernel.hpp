// The W×W transpose of W xsimd vectors in registers, for the kernels compiled per
// instruction set (the GEMM's packing, im2col's transposed rows). Included only by the
// per-architecture translation units' kernel headers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

namespace tg::simd_kernel {

// The W×W transpose in registers, as log2(W) stages of swapping the off-diagonal h × h
// blocks of every 2h × 2h block: lanes with bit h set take the partner vector's lanes
// shifted up by h, and the partner takes this vector's lanes shifted down by h.
template <class U, std::size_t h, bool up>
struct ShiftLanes {
    static constexpr U get(std::size_t j, std::size_t n) { return static_cast<U>(up ? (j + n - h) % n : (j + h) % n); }
};
template <std::size_t h>
struct BitClear {
    static constexpr bool get(std::size_t j, std::size_t) { return (j & h) == 0; }
};
template <class Arch, class T, std::size_t h>
[[gnu::always_inline]] inline void transpose_stage(xsimd::batch<T, Arch>* v) {
    using V = xsimd::batch<T, Arch>;
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    constexpr auto up = xsimd::make_batch_constant<xsimd::batch<U, Arch>, ShiftLanes<U, h, true>>();
    constexpr auto down = xsimd::make_batch_constant<xsimd::batch<U, Arch>, ShiftLanes<U, h, false>>();
    constexpr auto keep = xsimd::make_batch_bool_constant<V, BitClear<h>>();
    for (std::size_t i = 0; i < V::size; ++i)
        if ((i & h) == 0) {
            const V a = v[i], b = v[i + h];
            v[i] = xsimd::select(keep, a, xsimd::swizzle(b, up));
            v[i + h] = xsimd::select(keep, xsimd::swizzle(a, down), b);
        }
    if constexpr (h > 1) transpose_stage<Arch, T, h / 2>(v);
}

// v[i][j] becomes v[j][i].
template <class Arch, class T>
[[gnu::always_inline]] inline void transpose_in_registers(xsimd::batch<T, Arch>* v) {
    transpose_stage<Arch, T, xsimd::batch<T, Arch>::size / 2>(v);
}

}  // namespace tg::simd_kernel
