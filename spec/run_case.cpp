#include "tapegrad/spec/run_case.hpp"

#include <utility>
#include <vector>

#include "tapegrad/core/npy.hpp"
#include "tapegrad/spec/case_file.hpp"
#include "tapegrad/spec/opset.hpp"

namespace tg {

namespace {

// Results above this size are refused before they are allocated (as .npy inputs are).

// The attribute that made axis `a` of the result so long, for the error message.
std::string size_culprit(const ResolvedOp& r, const CaseFile& c, std::size_t a) {
    const AxisResolution& ar = r.axes[a];
    if (r.comp == Computation::Conv) return ar.pb + ar.pe > ar.out ? "pads_begin/pads_end" : "data";
    if (c.inputs.size() > 2 || c.attrs.count("output_shape")) return "output_shape";
    const std::int64_t output_padding = ar.out - (ar.L - ar.pb - ar.pe);
    return output_padding > ar.L ? "output_padding" : "strides";
}

// Refuses a result over the size limit before anything is allocated, naming the attribute
// behind its longest axis.
void check_result_size(const ResolvedOp& r, const CaseFile& c, DType dt) {
    const double bytes = static_cast<double>(dtype_size(dt)) *
                         [&] { double n = 1; for (std::int64_t d : r.result_shape) n *= static_cast<double>(d); return n; }();
    if (bytes <= static_cast<double>(kMaxResultBytes)) return;
    std::size_t longest = 0;
    for (std::size_t a = 1; a < r.axes.size(); ++a)
        if (r.axes[a].out > r.axes[longest].out) longest = a;
    const std::string key = size_culprit(r, c, longest);
    fail(key, r.name, ": the output of shape ", shape_str(r.result_shape), " would need ", bytes,
         " bytes, over the limit of ", kMaxResultBytes, " (spatial axis ", longest, " is ", r.axes[longest].out,
         " long because of ", key, ")");
}

}  // namespace

std::string error_line(const std::exception& e) {
    std::string msg = e.what();
    for (char& ch : msg)
        if (ch == '\n' || ch == '\r') ch = ' ';
    return "error: " + msg;
}

void run_case(const std::string& path, double work_limit) {
    const CaseFile c = read_case(path);
    DType dt;
    const std::vector<Tensor> in = load_inputs(c, dt);
    const ResolvedOp r = resolve_op(c.opset, c.op, c.attrs, in);
    check_result_size(r, c, dt);
    // The op, and with grad_output its two gradients: three times the work.
    const double work = r.geom.macs() * (c.grad_output ? 3 : 1);
    if (work > work_limit)
        fail("work", r.name, ": the case needs about ", work, " multiply-adds, over the work limit of ", work_limit,
             " (raise it with --work-limit)");

    std::vector<std::pair<std::string, Tensor>> files;
    if (!c.grad_output) {
        files.emplace_back(c.output, run_op(r, in));
    } else {
        Tensor dy = read_npy(*c.grad_output, "grad_output");
        if (!is_float(dy.dtype())) fail("grad_output", "grad_output has dtype ", dtype_name(dy.dtype()), ", must be float");
        if (dy.shape() != r.result_shape)
            fail("grad_output", r.name, ": grad_output has shape ", shape_str(dy.shape()), " but the result has shape ",
                 shape_str(r.result_shape));
        // One pass through the tape: the op, then backward from dy.
        OpRun run = run_op_with_grads(r, in, dy.to(dt));
        files.emplace_back(c.output, std::move(run.result));
        for (std::size_t i = 0; i < c.grad_inputs.size(); ++i) {
            if (!c.grad_inputs[i]) continue;
            if (!run.grads[i].defined())
                fail("grad_inputs", "grad_inputs[", i, "] must be null: input ", i, " (an integer shape) has no gradient");
            files.emplace_back(*c.grad_inputs[i], std::move(run.grads[i]));
        }
    }
    // Everything or nothing: every file is written beside its target first, and only then
    // are they all renamed into place; a failure before that leaves every file as it was.
    NpyWriteSet out;
    for (const auto& [p, t] : files) out.stage(p, t, "output");
    out.commit();
}

}  // namespace tg
