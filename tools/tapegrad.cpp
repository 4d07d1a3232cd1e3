// The `tapegrad` command line (docs/cases.md): `run` executes one op of a case file,
// `explain` shows how its padding and output shape were resolved (from shapes alone),
// `gradcheck` checks its gradients, `bench` times the convolution kernels on a shapes file
// (tools/bench_cmd.cpp).
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/npy.hpp"
#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_kernels.hpp"
#include "tapegrad/spec/opset.hpp"
#include "tapegrad/spec/case_file.hpp"
#include "tapegrad/spec/run_case.hpp"

namespace tg {

int cmd_gradcheck(const std::string& path, double work_limit);  // tools/gradcheck_cmd.cpp
int cmd_bench(const std::vector<std::string>& args);  // tools/bench_cmd.cpp

namespace {

int cmd_run(const std::string& path, double work_limit) {
    run_case(path, work_limit);
    return 0;
}

// The output_padding attribute on axis a (already validated by resolve_op), or 0.
std::int64_t output_padding_of(const CaseFile& c, std::size_t a) {
    auto it = c.attrs.find("output_padding");
    if (it == c.attrs.end()) return 0;
    const auto* v = std::get_if<std::vector<std::int64_t>>(&it->second);
    return v && a < v->size() ? (*v)[a] : 0;
}

// Configurations that are legal but rarely what was meant, per axis, as "warning:" lines.
std::vector<std::string> explain_warnings(const ResolvedOp& r, const CaseFile& c) {
    std::vector<std::string> w;
    const ConvGeometry& g = r.geom;
    const bool has_op_attr = [&] {
        for (const char* a : {"openvino ConvolutionBackpropData", "openvino GroupConvolutionBackpropData", "onednn ConvTranspose"})
            if (r.name == a) return true;
        return false;
    }();
    const bool requested = c.inputs.size() > 2 && r.comp == Computation::ConvT && !r.has_bias;
    for (int a = 0; a < g.D(); ++a) {
        const AxisResolution& ar = r.axes[static_cast<std::size_t>(a)];
        const std::string ax = "axis " + std::to_string(a) + ": ";
        const std::int64_t s = g.stride[a], op = output_padding_of(c, static_cast<std::size_t>(a));
        if (op != 0 && !has_op_attr)
            w.push_back(ax + "output_padding " + std::to_string(op) + " is validated but has no effect for " + r.name +
                        " (its output size comes from " + (r.comp == Computation::ConvT ? "output_shape" : "the forward rule F") + ")");
        if (r.comp == Computation::ConvT) {
            const std::int64_t X = g.out_size[a], Y = ar.out;
            if (has_op_attr && op >= s)
                w.push_back(ax + "output_padding " + std::to_string(op) + " >= stride " + std::to_string(s) +
                            ": ONNX and PyTorch reject this (they require output_padding < stride); here it is legal and "
                            "lengthens the output by " + std::to_string(op));
            const std::int64_t zeros = std::min(Y, ar.pb + Y - ar.L);
            if (zeros > 0) {
                std::string why;
                if (requested || r.name == "onednn ConvolutionBackpropData")
                    why = "the requested output size " + std::to_string(Y) + " runs past L - pb = " + std::to_string(ar.L - ar.pb);
                else
                    why = "output_padding " + std::to_string(op) + " > pads_end " + std::to_string(ar.pe);
                w.push_back(ax + "the last " + std::to_string(zeros) + " output position(s) (t >= L - pb = " +
                            std::to_string(ar.L - ar.pb) + ") lie past the full transposed length L = " + std::to_string(ar.L) +
                            ": no input reaches them and they are always 0 (" + why + ")");
            }
            if (s > ar.eff && X > 1)
                w.push_back(ax + "stride " + std::to_string(s) + " > eff " + std::to_string(ar.eff) + ": in every " +
                            std::to_string(s) + " positions of the full result, " + std::to_string(s - ar.eff) +
                            " receive no input and are 0");
        } else {
            const std::int64_t X = g.in_size[a], Y = ar.out, pb = ar.pb;
            const std::int64_t first = pb >= ar.eff ? std::min(Y, (pb - ar.eff) / s + 1) : 0;
            const std::int64_t last = std::max<std::int64_t>(0, Y - std::max(first, ceil_div(X + pb, s)));
            if (first > 0)
                w.push_back(ax + "pads_begin " + std::to_string(pb) + " >= eff " + std::to_string(ar.eff) + ": the first " +
                            std::to_string(first) + " output(s) see only padding (0, or the bias)");
            if (last > 0)
                w.push_back(ax + "pads_end " + std::to_string(ar.pe) + " is so large that the last " + std::to_string(last) +
                            " output(s) see only padding (0, or the bias)");
            if (s > ar.eff && Y > 1)
                w.push_back(ax + "stride " + std::to_string(s) + " > eff " + std::to_string(ar.eff) + ": " +
                            std::to_string(s - ar.eff) + " of every " + std::to_string(s) +
                            " input positions are never read (their gradient is 0)");
        }
    }
    return w;
}

int cmd_explain(const std::string& path) {
    const CaseFile c = read_case(path);
    DType dt;
    const std::vector<InputInfo> in = input_infos(c, dt);  // shapes only: no float data is read
    const ResolvedOp r = resolve_op_info(c.opset, c.op, c.attrs, in);
    const ConvGeometry& g = r.geom;
    const bool convt = r.comp == Computation::ConvT;
    std::cout << r.name << " (" << (convt ? "CONVT: transposed convolution" : "CONV: forward convolution")
              << "), layout " << (g.layout == Layout::NCX ? "NCX" : "NXC") << ", groups " << g.G << ", dtype "
              << dtype_name(dt) << "\n";
    std::cout << "  data " << shape_str(in[0].shape) << ", filter " << shape_str(in[1].shape) << " -> canonical W "
              << shape_str(g.weight_shape()) << " [G, O_g, I_g, K...]\n";
    for (int a = 0; a < g.D(); ++a) {
        const AxisResolution& ar = r.axes[static_cast<std::size_t>(a)];
        std::cout << "  axis " << a << ": rule " << ar.rule << "\n    X " << (convt ? g.out_size[a] : g.in_size[a])
                  << ", K " << g.kernel[a] << ", s " << g.stride[a] << ", d " << g.dilation[a];
        if (c.attrs.count("output_padding")) std::cout << ", op " << output_padding_of(c, static_cast<std::size_t>(a));
        std::cout << "\n    " << ar.formula << "\n    -> pads_begin " << ar.pb << ", pads_end " << ar.pe;
        if (convt) std::cout << ", full length L " << ar.L;
        std::cout << ", total padding " << ar.pb + ar.pe << ", output size " << ar.out << "\n";
    }
    std::cout << "  output shape " << shape_str(r.result_shape) << "\n";
    for (const std::string& w : explain_warnings(r, c)) std::cout << "warning: " << w << "\n";
    std::cout << "legend (docs/ops.md#notation):\n"
                 "  CONV, CONVT  forward convolution; transposed convolution (its data gradient)\n"
                 "  G, O_g, I_g  groups; channels per group on the o-side (CONV result, CONVT data) and the i-side\n"
                 "  X            the op's data-input size on the axis;  Y: its output size\n"
                 "  K            kernel size (from the filter's shape);  s, d: stride, dilation\n"
                 "  pb, pe       pads_begin, pads_end as resolved (implied when the output size is given)\n"
                 "  op           output_padding;  total: pb + pe\n"
                 "  eff          dilated kernel extent d*(K-1)+1\n"
                 "  L            full transposed length s*(X-1)+eff: outputs at t + pb >= L are 0\n"
                 "  Yo           the requested result size (oneDNN ConvolutionBackpropData)\n"
                 "  rule         F, T-OV, T-CT or T-CBD (docs/ops.md#padding-and-output-sizes)\n";
    return 0;
}

void usage(std::FILE* f) {
    std::fprintf(f,
                 "usage: tapegrad run CASE.json      run one op of a case file and write its outputs\n"
                 "       tapegrad explain CASE.json  show how padding and the output shape are resolved (reads\n"
                 "                                     only shapes: .npy headers or {\"shape\": [...]} inputs)\n"
                 "       tapegrad gradcheck CASE.json  check the op's gradients (finite differences, second\n"
                 "                                     derivatives, adjoint identity, dtype vs f64) on random inputs\n"
                 "       tapegrad bench --shapes SHAPES.json [options]\n"
                 "                                     time the convolution kernels on the transposed-convolution\n"
                 "                                     shapes of SHAPES.json (format: docs/cases.md#tapegrad-bench)\n"
                 "\n"
                 "run, explain and gradcheck options (before or after CASE.json):\n"
                 "  --memory-limit BYTES  the most memory tensors and workspaces may hold (e.g. 8G, 512M);\n"
                 "                    default TAPEGRAD_MEMORY_LIMIT, else 3/4 of the physical memory\n"
                 "  --work-limit N    the most multiply-adds a command may run (default 2e11, about a minute)\n"
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
                 "  --clock wall|cpu  time calls on the wall clock (default) or by CPU time (--threads 1 only;\n"
                 "                    leaves out the time slices other processes take on a shared machine)\n"
                 "Per (shape, op): one warm-up call, then at least 3 and at most 1000 calls; the median time,\n"
                 "GFLOP/s = 2*N*C_in*(C_out/groups)*prod(kernel)*prod(input) / time, and extra MiB = the peak\n"
                 "of the kernels' workspace (temporaries and their cache; not inputs or outputs).\n"
                 "\n"
                 "Case files, commands and exit codes: docs/cases.md. Op semantics, layouts and padding rules:\n"
                 "docs/ops.md.\n");
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
    if (argc < 3) {
        std::fprintf(stderr, "error: expected a command and a case file (try tapegrad --help)\n");
        return 1;
    }
    const std::string cmd = argv[1];
    try {
        // The environment's settings, read now so that a bad value is this command's one
        // error line (the library reads each on first use, whichever op that is).
        (void)tg::num_threads();
        (void)tg::transposed_algo();
        if (bench) return tg::cmd_bench(std::vector<std::string>(argv + 2, argv + argc));
        // tapegrad CMD [--memory-limit BYTES] [--work-limit MACS] CASE.json
        std::string path;
        double work_limit = tg::kDefaultWorkLimit;  // spec/run_case.hpp
        for (int i = 2; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--memory-limit" || a == "--work-limit") {
                if (i + 1 >= argc) tg::fail(a.substr(2), a, " needs a value");
                const std::string v = argv[++i];
                const std::int64_t n = tg::parse_byte_count(v);
                if (n < 1) tg::fail(a.substr(2), a, " '", v, "' is not a positive count (e.g. 8G, 1000000)");
                if (a == "--memory-limit") tg::set_memory_limit(n);
                else work_limit = static_cast<double>(n);
            } else if (a.size() > 1 && a[0] == '-') {
                tg::fail("option", "unknown option '", a, "' (try tapegrad --help)");
            } else if (!path.empty()) {
                tg::fail("case", "expected one case file, got '", path, "' and '", a, "'");
            } else {
                path = a;
            }
        }
        if (path.empty()) tg::fail("case", "expected a case file after '", cmd, "'");
        if (cmd == "run") return tg::cmd_run(path, work_limit);
        if (cmd == "explain") return tg::cmd_explain(path);
        if (cmd == "gradcheck") return tg::cmd_gradcheck(path, work_limit);
        std::fprintf(stderr, "error: unknown command '%s' (expected run, explain, gradcheck or bench)\n",
                     tg::clip_message(cmd, 80).c_str());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", tg::error_line(e).c_str());
        return 1;
    } catch (...) {
        std::fprintf(stderr, "error: unexpected failure\n");
        return 1;
    }
}
