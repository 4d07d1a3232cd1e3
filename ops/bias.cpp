#include "bias.hpp"

#include <type_traits>

namespace tg::detail {

template <class T>
void add_bias(T* out, const T* bias, std::int64_t images, std::int64_t C, std::int64_t P, Layout layout, bool relu) {
    // A run of n values and its bias b(q) (none: nothing added, as −0 + 0 would be +0), then
    // the ReLU as a select: each case one loop the compiler vectorises.
    auto run = [relu](T* o, std::int64_t n, auto b) {
        if constexpr (std::is_same_v<decltype(b), std::nullptr_t>) {
            if (relu) {
#pragma omp simd
                for (std::int64_t q = 0; q < n; ++q) o[q] = o[q] < T(0) ? T(0) : o[q];
            }
        } else if (relu) {
#pragma omp simd
            for (std::int64_t q = 0; q < n; ++q) {
                const T v = o[q] + b(q);
                o[q] = v < T(0) ? T(0) : v;
            }
        } else {
#pragma omp simd
            for (std::int64_t q = 0; q < n; ++q) o[q] += b(q);
        }
    };
    for (std::int64_t n = 0; n < images; ++n) {
        T* o = out + n * C * P;
        if (layout == Layout::NCX) {  // a run of P positions per channel, one bias value
            for (std::int64_t c = 0; c < C; ++c) {
                if (!bias) run(o + c * P, P, nullptr);
                else run(o + c * P, P, [v = bias[c]](std::int64_t) { return v; });
            }
        } else {  // a run of C channels per position, the bias along it
            for (std::int64_t q = 0; q < P; ++q) {
                if (!bias) run(o + q * C, C, nullptr);
                else run(o + q * C, C, [bias](std::int64_t c) { return bias[c]; });
            }
        }
    }
}

template void add_bias<float>(float*, const float*, std::int64_t, std::int64_t, std::int64_t, Layout, bool);
template void add_bias<double>(double*, const double*, std::int64_t, std::int64_t, std::int64_t, Layout, bool);

}  // namespace tg::detail
