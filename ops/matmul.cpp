#include "tapegrad/ops/matmul.hpp"

#include <type_traits>

#include "tapegrad/core/blas.hpp"

namespace tg {

Tensor matmul(const Tensor& a, const Tensor& b) {
    if (!a.defined() || !b.defined()) fail("input", "matmul: operand ", a.defined() ? "b" : "a", " is undefined");
    if (a.ndim() != 2 || b.ndim() != 2 || a.shape()[1] != b.shape()[0])
        fail("shape", "matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
             " are not [M, K] and [K, N]");
    if (a.dtype() != b.dtype() || !is_float(a.dtype()))
        fail("dtype", "matmul: operands must share one float dtype, got ", dtype_name(a.dtype()), " ", shape_str(a.shape()),
             " and ", dtype_name(b.dtype()), " ", shape_str(b.shape()));
    const std::int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
    const DType ct = compute_dtype(a.dtype());
    // An operand that is the transpose of a contiguous matrix (a Linear layer's weight,
    // ag::transpose of a gradient) goes to the GEMM as it is, with its transpose flag.
    auto transposed = [&](const Tensor& t) {
        return t.dtype() == ct && !t.is_contiguous() && t.strides()[0] == 1 && t.strides()[1] == t.shape()[0];
    };
    const bool ta = transposed(a), tb = transposed(b);
    const Tensor A = ta ? a : a.to(ct).contiguous(), B = tb ? b : b.to(ct).contiguous();
    Tensor C = Tensor::zeros({M, N}, ct);
    if (M > 0 && N > 0 && K > 0) {
        with_compute_type(ct, [&](auto tag) {
            using T = decltype(tag);
            // C[M×N] = A[M×K] · B[K×N]; a transposed operand is read with its leading dimension
            gemm<T>(ta, tb, M, N, K, T(1), A.data<T>(), ta ? M : K, B.data<T>(), tb ? K : N, T(0), C.data<T>(), N);
        });
    }
    return C.to(a.dtype());
}

}  // namespace tg
