#include "tapegrad/dist/collectives.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>

#include "tapegrad/core/error.hpp"
#include "tapegrad/dist/context.hpp"

namespace tg::dist {

namespace {

void require_mpi(const char* fn) {
    if (!Context::initialized()) fail("mpi", "dist::", fn, ": MPI is not running (create a dist::Context first)");
}

int world_size() {
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <>
MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }

// Fails on every rank together when some rank's `value` differs from the others' (one
// small allreduce of [value, -value] under MAX, which gives the maximum and the minimum).
void check_same_everywhere(const char* fn, const char* what, long long value) {
    long long v[2] = {value, -value};
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (v[0] != -v[1])
        fail("mpi", "dist::", fn, ": the ranks differ in ", what, " (from ", -v[1], " to ", v[0], "; this rank has ",
             value, ")");
}

// The parameters `group` (indices into params, all of dtype T) averaged over the ranks,
// streamed through one bucket of `cap` elements: a parameter's gradient may end one bucket
// and begin the next. Each filled bucket is one MPI_Allreduce (sum), then divided by the
// world size and copied out; the results become the parameters' gradients.
template <class T>
void average_group(const std::vector<ag::Variable>& params, const std::vector<std::size_t>& group,
                   const std::vector<unsigned char>& local, std::size_t cap) {
    const T world = static_cast<T>(world_size());
    std::size_t total = 0;
    for (std::size_t i : group) total += static_cast<std::size_t>(params[i].numel());
    std::vector<T> bucket(std::min(cap, total));
    cap = bucket.size();

    std::vector<Tensor> out;  // the averaged gradients, in group order
    for (std::size_t i : group) out.push_back(Tensor::empty(params[i].shape(), params[i].dtype()));
    struct Span {  // a run of one gradient in the bucket
        std::size_t k;     // its index in `group` / `out`
        std::size_t from;  // its first element in the gradient
        std::size_t at;    // its first element in the bucket
        std::size_t count;
    };
    std::vector<Span> spans;
    std::size_t fill = 0;
    auto flush = [&] {
        MPI_Allreduce(MPI_IN_PLACE, bucket.data(), static_cast<int>(fill), mpi_type<T>(), MPI_SUM, MPI_COMM_WORLD);
        for (const Span& s : spans) {
            T* dst = out[s.k].template data<T>() + s.from;
            for (std::size_t e = 0; e < s.count; ++e) dst[e] = bucket[s.at + e] / world;
        }
        spans.clear();
        fill = 0;
    };
    for (std::size_t k = 0; k < group.size(); ++k) {
        const ag::Variable& p = params[group[k]];
        const Tensor g = local[group[k]] ? p.grad().contiguous() : Tensor::zeros(p.shape(), p.dtype());
        const T* src = g.template data<T>();
        const std::size_t n = static_cast<std::size_t>(g.numel());
        for (std::size_t from = 0; from < n;) {
            const std::size_t take = std::min(cap - fill, n - from);
            std::memcpy(bucket.data() + fill, src + from, take * sizeof(T));
            spans.push_back({k, from, fill, take});
            fill += take, from += take;
            if (fill == cap) flush();
        }
    }
    if (fill > 0) flush();
    for (std::size_t k = 0; k < group.size(); ++k) {
        ag::Variable p = params[group[k]];  // a handle on the same parameter
        p.set_grad(out[k]);
    }
}

template <class T>
void all_reduce_in_place(Tensor& t) {
    T* p = t.data<T>();
    for (std::int64_t left = t.numel(); left > 0;) {  // in pieces MPI's int count can hold
        const int n = static_cast<int>(std::min<std::int64_t>(left, INT_MAX));
        MPI_Allreduce(MPI_IN_PLACE, p, n, mpi_type<T>(), MPI_SUM, MPI_COMM_WORLD);
        p += n, left -= n;
    }
}

}  // namespace

void allreduce_gradients(const std::vector<ag::Variable>& params, std::size_t bucket_bytes) {
    require_mpi("allreduce_gradients");
    if (bucket_bytes == 0) fail("bucket_bytes", "dist::allreduce_gradients: bucket_bytes is 0, must be >= 1");
    check_same_everywhere("allreduce_gradients", "their number of parameters", static_cast<long long>(params.size()));

    // Which parameters have a gradient here, then on any rank (one allreduce under MAX).
    std::vector<unsigned char> local(params.size()), any(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        const ag::Variable& p = params[i];
        if (!p.defined()) fail("params", "dist::allreduce_gradients: parameter ", i, " is undefined");
        local[i] = p.requires_grad() && p.has_grad();
    }
    MPI_Allreduce(local.data(), any.data(), static_cast<int>(params.size()), MPI_UNSIGNED_CHAR, MPI_MAX,
                  MPI_COMM_WORLD);

    std::vector<std::size_t> f32, f64;
    for (std::size_t i = 0; i < params.size(); ++i) {
        if (!any[i]) continue;
        const DType t = params[i].dtype();
        if (t == DType::f32) f32.push_back(i);
        else if (t == DType::f64) f64.push_back(i);
        else
            fail("params", "dist::allreduce_gradients: parameter ", i, " ('", params[i].name(), "') is ",
                 dtype_name(t), ", only f32 and f64 gradients are reduced");
    }
    // A bucket holds at least one element and at most what one MPI count (an int) can say.
    auto cap = [&](std::size_t elem) { return std::clamp<std::size_t>(bucket_bytes / elem, 1, INT_MAX); };
    if (!f32.empty()) average_group<float>(params, f32, local, cap(sizeof(float)));
    if (!f64.empty()) average_group<double>(params, f64, local, cap(sizeof(double)));
}

void broadcast_parameters(nn::Module& module, int root) {
    require_mpi("broadcast_parameters");
    const int world = world_size();
    if (root < 0 || root >= world)
        fail("root", "dist::broadcast_parameters: root is ", root, ", must be in [0, ", world, ")");
    nn::StateDict state = module.state_dict().clone();  // fresh contiguous copies to receive into
    long long bytes = 0;
    for (const auto& [name, t] : state) bytes += static_cast<long long>(t.numel() * dtype_size(t.dtype()));
    check_same_everywhere("broadcast_parameters", "their number of state tensors", static_cast<long long>(state.size()));
    check_same_everywhere("broadcast_parameters", "their state's bytes", bytes);
    for (const auto& [name, t] : state) {
        auto* p = static_cast<char*>(const_cast<void*>(t.raw_data()));
        for (long long left = t.numel() * static_cast<long long>(dtype_size(t.dtype())); left > 0;) {
            const int n = static_cast<int>(std::min<long long>(left, INT_MAX));
            MPI_Bcast(p, n, MPI_BYTE, root, MPI_COMM_WORLD);
            p += n, left -= n;
        }
    }
    module.load_state_dict(state);
}

double average(double value) {
    require_mpi("average");
    MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return value / world_size();
}

ag::Variable all_reduce_sum(const ag::Variable& x) {
    require_mpi("all_reduce_sum");
    Tensor y = x.value().clone();
    if (y.dtype() == DType::f32) all_reduce_in_place<float>(y);
    else if (y.dtype() == DType::f64) all_reduce_in_place<double>(y);
    else fail("x", "dist::all_reduce_sum: x is ", dtype_name(y.dtype()), ", must be f32 or f64");
    // y = Σ_r x_r, and every rank's loss depends on y: the gradient reaching x on rank r is the
    // sum over the ranks of their gradients of y.
    return ag::record("all_reduce_sum", y, {x}, {},
                      [](const ag::SavedContext&, const ag::Variable& g) -> ag::Grads { return {all_reduce_sum(g)}; });
}

}  // namespace tg::dist
