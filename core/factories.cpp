#include "tapegrad/core/factories.hpp"

#include <cmath>
#include <vector>

namespace tg {

Tensor zeros(const Shape& shape, DType dtype) { return Tensor::zeros(shape, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return Tensor::full(shape, 1.0, dtype); }
Tensor full(const Shape& shape, double value, DType dtype) { return Tensor::full(shape, value, dtype); }

namespace {

enum class Dist { normal, uniform };

Tensor draw(const char* op, const Shape& shape, DType dtype, Generator& gen, Dist dist) {
    if (!is_float(dtype))
        fail("dtype", op, ": dtype ", dtype_name(dtype), " is not a float dtype (shape ", shape_str(shape), ")");
    std::vector<double> v(static_cast<std::size_t>(shape_numel(shape, "shape")));
    if (dist == Dist::normal) gen.fill_normal(v);
    else gen.fill_uniform(v);
    return Tensor::from(shape, v, dtype);
}

}  // namespace

Tensor randn(const Shape& shape, DType dtype) { return randn(shape, dtype, default_generator()); }
Tensor randn(const Shape& shape, Generator& gen, DType dtype) { return randn(shape, dtype, gen); }
Tensor randn(const Shape& shape, DType dtype, Generator& gen) { return draw("randn", shape, dtype, gen, Dist::normal); }

Tensor rand(const Shape& shape, DType dtype) { return rand(shape, dtype, default_generator()); }
Tensor rand(const Shape& shape, Generator& gen, DType dtype) { return rand(shape, dtype, gen); }
Tensor rand(const Shape& shape, DType dtype, Generator& gen) { return draw("rand", shape, dtype, gen, Dist::uniform); }

Tensor arange(double start, double end, double step, DType dtype) {
    if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
        fail("arange", "arange: start=", start, ", end=", end, ", step=", step, " must all be finite");
    if (step == 0) fail("step", "arange: step=0 (start=", start, ", end=", end, ")");
    if ((end - start) * step < 0)
        fail("step", "arange: step=", step, " points away from end=", end, " (start=", start, ")");
    const double count = std::ceil((end - start) / step);
    if (count > 1e15) fail("arange", "arange: ", count, " values (start=", start, ", end=", end, ", step=", step, ")");
    const auto n = static_cast<std::size_t>(count);
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i) * step;
    return Tensor::from({static_cast<std::int64_t>(n)}, v, dtype);
}

Tensor arange(double end, DType dtype) { return arange(0, end, 1, dtype); }

}  // namespace tg
