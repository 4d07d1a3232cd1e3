// `tapegrad gradcheck CASE.json`: the case's op on the tape (spec_op), checked with
// gradcheck, gradgradcheck and the adjoint identity in f64 on random inputs of the case's
// shapes, plus the case's dtype against f64 when it is not f64 (docs/gradcheck.md). Like
// `explain`, it reads only the inputs' shapes (docs/cases.md#inputs).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>

#include "tapegrad/autograd/conv.hpp"
#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/spec/case_file.hpp"
#include "tapegrad/spec/run_case.hpp"

namespace tg {

namespace {

// Finite differences cost two runs of the op per element: look at a random subset.
constexpr std::int64_t kMaxElements = 256;
constexpr std::int64_t kMaxElementsSecond = 48;

Tensor uniform(const Shape& s, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> v(static_cast<std::size_t>(shape_numel(s)));
    for (double& x : v) x = u(rng);
    return Tensor::from(s, v, DType::f64);
}

}  // namespace

int cmd_gradcheck(const std::string& path, double work_limit) {
    const CaseFile c = read_case(path);
    DType dt;
    // Only shapes are needed (and the values of an integer output_shape): the inputs are random.
    const std::vector<InputInfo> case_inputs = input_infos(c, dt);
    const ResolvedOp r = resolve_op_info(c.opset, c.op, c.attrs, case_inputs);
    // Two runs of the op per checked element and input, about three ops per second-order
    // evaluation, and a few more for the adjoint and precision rows.
    const double runs = 2.0 * kMaxElements * 3 + 6.0 * kMaxElementsSecond * 4 + 20;
    // A run also writes its whole f64 result (and reads its inputs): a mostly zero-filled
    // result (a huge output_padding, dilation or output_shape) costs time and memory with few
    // multiply-adds. A pass over an element counts as kElementCost multiply-adds (memory is
    // that much slower than an FMA slot), and the result must fit run's size limit.
    constexpr double kElementCost = 16;
    double elements = 1;
    for (std::int64_t d : r.result_shape) elements *= static_cast<double>(d);
    for (const InputInfo& t : case_inputs) elements += static_cast<double>(shape_numel(t.shape));
    if (elements * 8 > static_cast<double>(kMaxResultBytes))
        fail("work", r.name, ": gradcheck would hold ", elements, " f64 elements per run (the result ",
             shape_str(r.result_shape), "), over the limit of ", kMaxResultBytes, " bytes");
    const double per_run = std::max(r.geom.macs(), kElementCost * elements);
    if (per_run * runs > work_limit)
        fail("work", r.name, ": gradcheck needs about ", per_run * runs, " operations (", runs, " runs of an op of ",
             r.geom.macs(), " multiply-adds over ", elements, " elements), over the work limit of ", work_limit,
             " (raise it with --work-limit)");

    std::mt19937_64 rng(0);
    std::vector<Tensor> x;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < case_inputs.size(); ++i) {
        const int ii = static_cast<int>(i);
        const InputInfo& t = case_inputs[i];
        x.push_back(is_float(t.dtype) ? uniform(t.shape, rng)
                                      : Tensor::from(t.shape, std::vector<double>(t.values->begin(), t.values->end()), t.dtype));
        names.push_back(ii == r.data_input ? "data" : ii == r.filter_input ? "filter" : ii == r.bias_input ? "bias" : "output_shape");
    }
    const ag::Function f = [&r](const std::vector<ag::Variable>& v) { return tg::spec_op(r, v); };

    ag::CheckOptions opt;
    opt.names = names;
    opt.max_elements = kMaxElements;
    ag::CheckReport rep = ag::gradcheck(f, x, opt);
    opt.max_elements = kMaxElementsSecond;
    rep.add(ag::gradgradcheck(f, x, opt));
    // With the bias at zero the op is linear in data and in filter.
    std::vector<Tensor> lin = x;
    if (r.has_bias) lin[static_cast<std::size_t>(r.bias_input)] = Tensor::zeros(x[static_cast<std::size_t>(r.bias_input)].shape(), DType::f64);
    rep.add(ag::check_adjoint(f, lin, r.data_input, opt));
    rep.add(ag::check_adjoint(f, lin, r.filter_input, opt));
    if (dt != DType::f64) {
        // The longest sum behind one element of the result or a gradient: CONV I_g·∏K,
        // CONVT O_g·∏K, CONV_BW N·∏(o-side), bias N·∏(result spatial).
        const ConvGeometry& g = r.geom;
        const std::int64_t n = std::max({g.Ig * g.kernel_numel(), g.Og * g.kernel_numel(), g.N * g.out_numel(),
                                         g.N * g.in_numel()});
        rep.add(ag::check_precision(f, x, dt, n, opt));
    }

    std::cout << r.name << ", " << dtype_name(dt) << "; inputs uniform in [-1, 1] with the case's shapes (seed 0);\n"
              << "finite differences in f64 on up to " << kMaxElements << " elements per input (" << kMaxElementsSecond
              << " for gradgradcheck), chosen at random\n\n"
              << rep.table();
    if (!rep.ok) {
        std::string first = rep.failures();
        first = first.substr(0, first.find('\n'));
        fail("gradcheck", r.name, ": gradient check failed: ", first);
    }
    std::cout << "all checks passed\n";
    return 0;
}

}  // namespace tg
