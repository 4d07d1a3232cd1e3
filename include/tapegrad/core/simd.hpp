// Which SIMD instruction set the hand-written kernels run on, decided once at run time
// from xsimd's CPU detection, so that one binary uses AVX-512 or AVX2 as the machine
// allows. Kernels written with xsimd are compiled once per set (files named *.avx2.cpp and
// *.avx512.cpp get the matching compiler flags) and reached through one mechanism, Dispatch.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace tg::simd {

enum class Isa {
    scalar,  // no AVX2: plain C++ loops, and OpenBLAS for GEMM
    avx2,    // AVX2 + FMA
    avx512,  // AVX-512 F, CD, DQ, BW, VL
};

const char* isa_name(Isa isa);
Isa parse_isa(const std::string& name);  // "scalar", "avx2" or "avx512"; fails otherwise

// The sets this CPU (and OS) supports, weakest first; always holds Isa::scalar.
std::vector<Isa> available();
// The set in use: the best available one, or the one given by force() or by the
// TAPEGRAD_SIMD environment variable (read once).
Isa active();
// Runs every dispatched kernel on `isa` from now on (tests use it to reach each set).
// Fails if the CPU lacks it. Not meant to change while kernels run in other threads.
void force(Isa isa);

// The one dispatch mechanism for per-instruction-set kernels (as ATen's DispatchStub): a
// kernel family is a table, a struct of function pointers, defined once per set: in the
// family's *.avx2.cpp and *.avx512.cpp files, and in plain C++ for Isa::scalar. A Dispatch
// holds the three tables; a caller takes active() (the table of simd::active(), looked up
// on every call, so force() takes effect at once) or on(isa). Adding a kernel to a family
// is one table entry; adding a family is one table type and its three instances.
template <class Table>
class Dispatch {
public:
    constexpr Dispatch(const Table& scalar, const Table& avx2, const Table& avx512) : tables_{&scalar, &avx2, &avx512} {}
    const Table& on(Isa isa) const { return *tables_[static_cast<int>(isa)]; }
    const Table& active() const { return on(simd::active()); }

private:
    const Table* tables_[3];  // indexed by Isa
};

// A family whose tables are per element type as well (Table<float>, Table<double>): one
// Dispatch for each; on<T>(isa) and active<T>() pick T's.
template <template <class> class Table>
struct TypedDispatch {
    Dispatch<Table<float>> f32;
    Dispatch<Table<double>> f64;
    template <class T>
    const Table<T>& on(Isa isa) const {
        if constexpr (std::is_same_v<T, float>) return f32.on(isa);
        else return f64.on(isa);
    }
    template <class T>
    const Table<T>& active() const { return on<T>(simd::active()); }
};

// f(std::integral_constant<int, n>{}) for a run-time n in [1, MAX]: register tiles' sizes
// are template parameters of the kernels, picked per block at run time.
template <int MAX, class F>
void with_size(std::int64_t n, F&& f) {
    if constexpr (MAX > 1) {
        if (n >= MAX) f(std::integral_constant<int, MAX>{});
        else with_size<MAX - 1>(n, f);
    } else {
        f(std::integral_constant<int, 1>{});
    }
}

}  // namespace tg::simd
