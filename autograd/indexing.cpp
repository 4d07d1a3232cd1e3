#include "tapegrad/autograd/indexing.hpp"

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/ops/index.hpp"

namespace tg::ag {

namespace {

Variable zeros_of(const Shape& shape, DType dtype) { return constant(Tensor::zeros(shape, dtype)); }

}  // namespace

Variable index_select(const Variable& a, int axis, const Tensor& index) {
    const Shape in = a.shape();
    return record("index_select", tg::index_select(a.value(), axis, index), {a}, {},
                  [in, axis, index](const SavedContext&, const Variable& g) -> Grads {
                      return {index_add(zeros_of(in, g.dtype()), axis, index, g)};
                  });
}

Variable index_add(const Variable& base, int axis, const Tensor& index, const Variable& src) {
    return record("index_add", tg::index_add(base.value(), axis, index, src.value()), {base, src}, {},
                  [axis, index](const SavedContext& c, const Variable& g) -> Grads {
                      return {g, c.needs_grad(1) ? index_select(g, axis, index) : Variable()};
                  });
}

Variable gather(const Variable& a, int axis, const Tensor& index) {
    const Shape in = a.shape();
    return record("gather", tg::gather(a.value(), axis, index), {a}, {},
                  [in, axis, index](const SavedContext&, const Variable& g) -> Grads {
                      return {scatter_add(zeros_of(in, g.dtype()), axis, index, g)};
                  });
}

Variable scatter_add(const Variable& base, int axis, const Tensor& index, const Variable& src) {
    if (src.defined() && index.defined() && src.requires_grad() && index.shape() != src.shape())
        fail("index", "scatter_add: the index ", shape_str(index.shape()), " must have the source's shape ",
             shape_str(src.shape()), " when the source needs a gradient (as PyTorch's backward)");
    return record("scatter_add", tg::scatter_add(base.value(), axis, index, src.value()), {base, src}, {},
                  [axis, index](const SavedContext& c, const Variable& g) -> Grads {
                      return {g, c.needs_grad(1) ? gather(g, axis, index) : Variable()};
                  });
}

Variable select(const Variable& a, int axis, std::int64_t index) {
    const int nd = a.ndim();
    const int ax = normalize_axis(axis, nd, "select");
    const std::int64_t n = a.shape()[static_cast<std::size_t>(ax)];
    const Tensor view = a.value().select(ax, index);  // validates the index
    const std::int64_t i = index < 0 ? index + n : index;
    return reshape(slice(a, ax, i, i + 1), view.shape());
}

Variable transpose(const Variable& a, int d0, int d1) {
    const int nd = a.ndim();
    const int x = normalize_axis(d0, nd, "transpose"), y = normalize_axis(d1, nd, "transpose");
    std::vector<int> axes(static_cast<std::size_t>(nd));
    for (int i = 0; i < nd; ++i) axes[static_cast<std::size_t>(i)] = i;
    std::swap(axes[static_cast<std::size_t>(x)], axes[static_cast<std::size_t>(y)]);
    return permute(a, axes);
}

Variable squeeze(const Variable& a) { return reshape(a, a.value().squeeze().shape()); }
Variable squeeze(const Variable& a, int axis) { return reshape(a, a.value().squeeze(axis).shape()); }
Variable unsqueeze(const Variable& a, int axis) { return reshape(a, a.value().unsqueeze(axis).shape()); }
Variable flatten(const Variable& a, int start, int end) { return reshape(a, a.value().flatten(start, end).shape()); }

Variable stack(const std::vector<Variable>& parts, int axis) {
    if (parts.empty()) fail("inputs", "stack: no variables to stack");
    std::vector<Variable> views;
    for (std::size_t p = 0; p < parts.size(); ++p) {
        if (!parts[p].defined()) fail("inputs", "stack: part ", p, " of ", parts.size(), " is undefined");
        if (parts[p].shape() != parts[0].shape())
            fail("shape", "stack: part ", p, " has shape ", shape_str(parts[p].shape()), ", part 0 has ",
                 shape_str(parts[0].shape()), " (all must be equal)");
        views.push_back(unsqueeze(parts[p], normalize_axis(axis, parts[0].ndim() + 1, "stack")));
    }
    return cat(views, axis);
}

}  // namespace tg::ag
