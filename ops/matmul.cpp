#include "tapegrad/ops/matmul.hpp"

#include <type_traits>

#include "bias.hpp"
#include "tapegrad/core/blas.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/ops/math.hpp"

namespace tg {

namespace {

void check_operands(const Tensor& a, const Tensor& b) {
    if (!a.defined() || !b.defined()) fail("input", "matmul: operand ", a.defined() ? "b" : "a", " is undefined");
    if (a.ndim() < 2 || b.ndim() < 2 || a.shape()[static_cast<std::size_t>(a.ndim() - 1)] != b.shape()[static_cast<std::size_t>(b.ndim() - 2)])
        fail("shape", "matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
             " are not [..., M, K] and [..., K, N]");
    if (a.dtype() != b.dtype() || !is_float(a.dtype()))
        fail("dtype", "matmul: operands must share one float dtype, got ", dtype_name(a.dtype()), " ", shape_str(a.shape()),
             " and ", dtype_name(b.dtype()), " ", shape_str(b.shape()));
}

Tensor matmul_2d(const Tensor& a, const Tensor& b) {
    const std::int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
    const DType ct = compute_dtype(a.dtype());
    // An operand that is the transpose of a contiguous matrix (a Linear layer's weight,
    // ag::transpose of a gradient) goes to the GEMM as it is, with its transpose flag.
    auto transposed = [&](const Tensor& t) {
        return t.dtype() == ct && !t.is_contiguous() && t.strides()[0] == 1 && t.strides()[1] == t.shape()[0];
    };
    const bool ta = transposed(a), tb = transposed(b);
    const Tensor A = ta ? a : a.to(ct).contiguous(), B = tb ? b : b.to(ct).contiguous();
    // The GEMM writes every element (beta 0: C is not read); K = 0 leaves the zeros.
    Tensor C = K > 0 ? Tensor::empty({M, N}, ct) : Tensor::zeros({M, N}, ct);
    if (M > 0 && N > 0 && K > 0) {
        with_compute_type(ct, [&](auto tag) {
            using T = decltype(tag);
            // C[M×N] = A[M×K] · B[K×N]; a transposed operand is read with its leading dimension
            gemm<T>(ta, tb, M, N, K, T(1), A.data<T>(), ta ? M : K, B.data<T>(), tb ? K : N, T(0), C.data<T>(), N);
        });
    }
    return C.to(a.dtype());
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
    check_operands(a, b);
    if (a.ndim() == 2 && b.ndim() == 2) return matmul_2d(a, b);
    // Batched: the leading dims broadcast (NumPy rules); one GEMM per batch element.
    const Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
    const Shape batch = broadcast_shapes(ba, bb, "matmul");
    const std::int64_t M = a.shape()[static_cast<std::size_t>(a.ndim() - 2)], K = a.shape().back(), N = b.shape().back();
    const DType ct = compute_dtype(a.dtype());
    const Tensor A = a.to(ct).contiguous(), B = b.to(ct).contiguous();
    Shape out_shape = batch;
    out_shape.push_back(M);
    out_shape.push_back(N);
    Tensor C = K > 0 ? Tensor::empty(out_shape, ct) : Tensor::zeros(out_shape, ct);
    const std::int64_t nb = shape_numel(batch);
    // The matrix index of batch element i in an operand of batch shape s (1-dims repeat).
    auto matrix_of = [&](std::int64_t i, const Shape& s) {
        const Shape idx = unravel_index(i, batch);
        std::int64_t m = 0;
        const std::size_t off = batch.size() - s.size();
        for (std::size_t d = 0; d < s.size(); ++d) m = m * s[d] + (s[d] == 1 ? 0 : idx[off + d]);
        return m;
    };
    if (M > 0 && N > 0 && K > 0) {
        with_compute_type(ct, [&](auto tag) {
            using T = decltype(tag);
            for (std::int64_t i = 0; i < nb; ++i)
                // C_i[M×N] = A_i[M×K] · B_i[K×N]
                gemm<T>(false, false, M, N, K, T(1), A.data<T>() + matrix_of(i, ba) * M * K, K,
                        B.data<T>() + matrix_of(i, bb) * K * N, N, T(0), C.data<T>() + i * M * N, N);
        });
    }
    return C.to(a.dtype());
}

Tensor linear(const Tensor& x, const Tensor& W, const Tensor& bias, bool relu) {
    if (!x.defined() || !W.defined()) fail("input", "linear: ", x.defined() ? "weight" : "input", " is undefined");
    if (W.ndim() != 2) fail("weight", "linear: weight has shape ", shape_str(W.shape()), ", expected [out, in]");
    if (x.ndim() != 2 || x.shape()[1] != W.shape()[1])
        fail("input", "linear: input has shape ", shape_str(x.shape()), ", the weight ", shape_str(W.shape()), " needs [N, ",
             W.shape()[1], "]");
    if (!is_float(x.dtype()) || W.dtype() != x.dtype())
        fail("weight", "linear: input and weight must share one float dtype, got ", dtype_name(x.dtype()), " and ",
             dtype_name(W.dtype()));
    if (bias.defined() && bias.shape() != Shape{W.shape()[0]})
        fail("bias", "linear: bias has shape ", shape_str(bias.shape()), ", the weight ", shape_str(W.shape()), " needs [",
             W.shape()[0], "]");
    if (bias.defined() && bias.dtype() != x.dtype())
        fail("bias", "linear: bias has dtype ", dtype_name(bias.dtype()), ", the input ", dtype_name(x.dtype()));
    Tensor y = matmul(x, W.transpose(0, 1));  // the transposed weight goes to the GEMM as it is
    if (is_16bit(y.dtype())) {  // rounded once by matmul: then the bias and the ReLU, each rounded
        if (bias.defined()) y = add(y, bias);
        return relu ? tg::relu(y) : y;
    }
    if (bias.defined() || relu)
        with_compute_type(y.dtype(), [&](auto tag) {
            using T = decltype(tag);
            const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
            detail::add_bias(y.data<T>(), b.defined() ? b.data<T>() : nullptr, y.shape()[0], y.shape()[1], 1, Layout::NXC, relu);
        });
    return y;
}

}  // namespace tg
