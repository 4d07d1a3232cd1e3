// The `tapegrad` command line: `run` executes one op of a case file (CASES.md), `explain`
// shows how its padding and output shape were resolved, `gradcheck` checks its gradients,
// `bench` times the convolution kernels on a shapes file (tools/bench_cmd.cpp).
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tapegrad/core/npy.hpp"
#include "tapegrad/spec/opset.hpp"
#include "tapegrad/spec/case_file.hpp"

namespace tg {

int cmd_gradcheck(const std::string& path);  // tools/gradcheck_cmd.cpp
int cmd_bench(const std::vector<std::string>& args);  // tools/bench_cmd.cpp

namespace {

// Results above this size are refused before they are allocated (as .npy inputs are).
constexpr std::int64_t kMaxResultBytes = std::int64_t{4} << 30;

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

int cmd_run(const std::string& path) {
    const CaseFile c = read_case(path);
    DType dt;
    const std::vector<Tensor> in = load_inputs(c, dt);
    const ResolvedOp r = resolve_op(c.opset, c.op, c.attrs, in);
    check_result_size(r, c, dt);

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
    // Write everything, or nothing: undo the files already written if a later one fails.
    std::vector<std::string> written;
    try {
        for (const auto& [p, t] : files) {
            write_npy(p, t, "output");
            written.push_back(p);
        }
    } catch (...) {
        for (const std::string& p : written) std::remove(p.c_str());
        throw;
    }
    return 0;
}

int cmd_explain(const std::string& path) {
    const CaseFile c = read_case(path);
    DType dt;
    const std::vector<Tensor> in = load_inputs(c, dt);
    const ResolvedOp r = resolve_op(c.opset, c.op, c.attrs, in);
    const ConvGeometry& g = r.geom;
    std::cout << r.name << " (" << (r.comp == Computation::Conv ? "CONV: forward convolution" : "CONVT: transposed convolution")
              << "), layout " << (g.layout == Layout::NCX ? "NCX" : "NXC") << ", groups " << g.G << ", dtype "
              << dtype_name(dt) << "\n";
    std::cout << "  data " << shape_str(in[0].shape()) << ", filter " << shape_str(in[1].shape()) << " -> canonical W "
              << shape_str(g.weight_shape()) << " [G, O_g, I_g, K...]\n";
    for (int a = 0; a < g.D(); ++a) {
        const AxisResolution& ar = r.axes[static_cast<std::size_t>(a)];
        std::cout << "  axis " << a << ": rule " << ar.rule << "\n    X " << (r.comp == Computation::Conv ? g.in_size[a] : g.out_size[a])
                  << ", K " << g.kernel[a] << ", stride " << g.stride[a] << ", dilation " << g.dilation[a] << "\n    "
                  << ar.formula << "\n    -> pads_begin " << ar.pb << ", pads_end " << ar.pe;
        if (r.comp == Computation::ConvT) std::cout << ", full length L " << ar.L;
        std::cout << ", total padding " << ar.pb + ar.pe << ", output size " << ar.out << "\n";
    }
    std::cout << "  output shape " << shape_str(r.result_shape) << "\n";
    return 0;
}

void usage(std::FILE* f) {
    std::fprintf(f,
                 "usage: tapegrad run CASE.json      run one op (CASES.md) and write its outputs\n"
                 "       tapegrad explain CASE.json  show how padding and the output shape are resolved\n"
                 "       tapegrad gradcheck CASE.json  check the op's gradients (finite differences, second\n"
                 "                                     derivatives, adjoint identity, dtype vs f64) on random inputs\n"
                 "       tapegrad bench --shapes SHAPES.json [options]\n"
                 "                                     time the convolution kernels on the transposed-convolution\n"
                 "                                     shapes of SHAPES.json (format of ../shared/bench/shapes.json)\n"
                 "\n"
                 "bench options:\n"
                 "  --ops LIST        comma-separated, of: bwd_data (the transposed convolution), fwd (the\n"
                 "                    convolution that is its data gradient), bwd_weights (that convolution's\n"
                 "                    filter gradient); default all three. Also: gemm (the f32 GEMM in use\n"
                 "                    on the layer's GEMM sizes, one column tile, scaled to the layer: its ceiling)\n"
                 "  --threads N       threads (N >= 1); default the library's (TAPEGRAD_NUM_THREADS or the cores)\n"
                 "  --batch N         overrides every shape's N (N >= 1)\n"
                 "  --layout NCX|NXC  tensor layout; default each shape's \"layout\" key, else NCX\n"
                 "  --dtype f32|bf16|f16  element type (inputs uniform in [-1, 1], fixed seed); default f32\n"
                 "  --only NAME       only the shape called NAME\n"
                 "  --json            one JSON object per line: shape, op, dtype, layout, threads, batch,\n"
                 "                    median_ms, gflops, extra_bytes\n"
                 "  --min-time S      time each (shape, op) for about S seconds (default 0.3; tests use 0.01)\n"
                 "Per (shape, op): one warm-up call, then at least 3 and at most 1000 calls; the median time,\n"
                 "GFLOP/s = 2*N*C_in*(C_out/groups)*prod(kernel)*prod(input) / time, and extra MiB = the peak\n"
                 "of the kernels' workspace (temporaries and their cache; not inputs or outputs).\n");
}

}  // namespace
}  // namespace tg

int main(int argc, char** argv) {
    if (argc == 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
        tg::usage(stdout);
        return 0;
    }
    const bool bench = argc >= 2 && !std::strcmp(argv[1], "bench");
    if (bench && argc == 3 && (!std::strcmp(argv[2], "--help") || !std::strcmp(argv[2], "-h"))) {
        tg::usage(stdout);
        return 0;
    }
    if (!bench && argc != 3) {
        std::fprintf(stderr, "error: expected a command and a case file (try tapegrad --help)\n");
        return 1;
    }
    const std::string cmd = argv[1], path = bench ? "" : argv[2];
    try {
        if (bench) return tg::cmd_bench(std::vector<std::string>(argv + 2, argv + argc));
        if (cmd == "run") return tg::cmd_run(path);
        if (cmd == "explain") return tg::cmd_explain(path);
        if (cmd == "gradcheck") return tg::cmd_gradcheck(path);
        std::fprintf(stderr, "error: unknown command '%s' (expected run, explain, gradcheck or bench)\n", cmd.c_str());
        return 1;
    } catch (const std::exception& e) {
        std::string msg = e.what();
        for (char& ch : msg)
            if (ch == '\n' || ch == '\r') ch = ' ';
        std::fprintf(stderr, "error: %s\n", msg.c_str());
        return 1;
    } catch (...) {
        std::fprintf(stderr, "error: unexpected failure\n");
        return 1;
    }
}
