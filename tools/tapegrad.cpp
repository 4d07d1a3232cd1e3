// The `tapegrad` command line (docs/cases.md): `run` executes one op of a case file,
// `explain` shows how its padding and output shape were resolved (from shapes alone),
// `gradcheck` checks its gradients, `bench` times the convolution kernels on a shapes file
// (tools/bench_cmd.cpp).
#include <cstdio>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include "commands.hpp"
#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/npy.hpp"
#include "tapegrad/core/simd.hpp"
#include "tapegrad/core/workspace.hpp"
#include "tapegrad/ops/conv_explain.hpp"
#include "tapegrad/ops/conv_kernels.hpp"
#include "tapegrad/ops/conv_plan.hpp"
#include "tapegrad/spec/opset.hpp"
#include "tapegrad/spec/case_file.hpp"
#include "tapegrad/spec/run_case.hpp"

namespace tg {

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

int cmd_explain(const std::string& path) {
    const CaseFile c = read_case(path);
    DType dt;
    const std::vector<InputInfo> in = input_infos(c, dt);  // shapes only: no float data is read
    const ResolvedOp r = resolve_op_info(c.opset, c.op, c.attrs, in);
    const ConvGeometry& g = r.geom;
    const bool convt = r.comp == Computation::ConvT;
    // The ops whose output_padding is in effect, and those whose output size is requested.
    const bool op_in_effect = [&] {
        for (const char* a : {"openvino ConvolutionBackpropData", "openvino GroupConvolutionBackpropData", "onednn ConvTranspose"})
            if (r.name == a) return true;
        return false;
    }();
    const bool has_op_attr = c.attrs.count("output_padding") > 0;
    ExplainOptions options;
    if (convt && op_in_effect && has_op_attr)
        for (int a = 0; a < g.D(); ++a) options.output_padding.push_back(output_padding_of(c, static_cast<std::size_t>(a)));
    options.requested_size = convt && ((c.inputs.size() > 2 && !r.has_bias) || r.name == "onednn ConvolutionBackpropData");
    const ConvExplanation e = explain(g, options);  // tapegrad/ops/conv_explain.hpp: what a C++ user gets too

    std::cout << r.name << " (" << (convt ? "CONVT: transposed convolution" : "CONV: forward convolution")
              << "), layout " << (g.layout == Layout::NCX ? "NCX" : "NXC") << ", groups " << g.G << ", dtype "
              << dtype_name(dt) << "\n";
    std::cout << "  data " << shape_str(in[0].shape) << ", filter " << shape_str(in[1].shape) << " -> canonical W "
              << shape_str(e.weight) << " [G, O_g, I_g, K...]\n";
    for (int a = 0; a < g.D(); ++a) {
        const AxisResolution& ar = r.axes[static_cast<std::size_t>(a)];
        const ConvAxisExplanation& x = e.axes[static_cast<std::size_t>(a)];
        std::string numbers = x.numbers();
        if (has_op_attr && !x.has_op) numbers += ", op " + std::to_string(output_padding_of(c, static_cast<std::size_t>(a)));
        // The spec's rule (auto_pad, output_shape) resolved the pads; the geometry's
        // arithmetic then gives the same result.
        std::cout << "  axis " << a << ": rule " << ar.rule << "\n    " << numbers << "\n    " << ar.formula << "\n    -> "
                  << x.result() << "\n";
    }
    std::cout << "  output shape " << shape_str(r.result_shape) << "\n";
    if (has_op_attr && !op_in_effect)
        for (int a = 0; a < g.D(); ++a)
            if (output_padding_of(c, static_cast<std::size_t>(a)) != 0)
                std::cout << "warning: axis " << a << ": output_padding " << output_padding_of(c, static_cast<std::size_t>(a))
                      << " is validated but has no effect for " << r.name << " (its output size comes from "
                      << (convt ? "output_shape" : "the forward rule F") << ")\n";
    for (const std::string& w : e.warnings) std::cout << "warning: " << w << "\n";
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

}  // namespace
}  // namespace tg

int main(int argc, char** argv) {
    try {
        tg::cli::Parser cl("tapegrad", "Runs, explains, checks and times the convolution family's ops (docs/cases.md)");
        cl.footer("Case files, commands and exit codes: docs/cases.md. Op semantics, layouts and padding rules: docs/ops.md.");
        // run, explain and gradcheck: tapegrad CMD CASE.json [--memory-limit BYTES] [--work-limit N]
        std::string path, memory_limit, work_limit;
        auto case_command = [&](const char* name, const char* what) -> const tg::cli::Command& {
            return cl.command(name, what)
                .positional("CASE", path, "the case file")
                .type("CASE.json")
                .option("--memory-limit", memory_limit,
                        "the most memory tensors and workspaces may hold (e.g. 8G, 512M); default TAPEGRAD_MEMORY_LIMIT, "
                        "else 3/4 of the physical memory")
                .type("BYTES")
                .option("--work-limit", work_limit, "the most multiply-adds a command may run (default 2e11, about a minute)")
                .type("N");
        };
        const tg::cli::Command& run = case_command("run", "run one op of a case file and write its outputs");
        const tg::cli::Command& explain = case_command(
            "explain", "show how padding and the output shape are resolved (reads only shapes: .npy headers or "
                       "{\"shape\": [...]} inputs)");
        const tg::cli::Command& gradcheck = case_command(
            "gradcheck", "check the op's gradients (finite differences, second derivatives, adjoint identity, dtype vs "
                         "f64) on random inputs");
        tg::BenchArgs bench_args;
        const tg::cli::Command& bench = tg::add_bench_command(cl, bench_args);
        if (!cl.parse(argc, argv)) return 0;
        if (!run.chosen() && !explain.chosen() && !gradcheck.chosen() && !bench.chosen())
            tg::fail("command", "expected a command: run, explain, gradcheck or bench (tapegrad --help)");
        // The environment's settings, read now so that a bad value is this command's one
        // error line (the library reads each on first use, whichever op that is).
        (void)tg::num_threads();
        (void)tg::transposed_algo();
        (void)tg::small_conv();
        (void)tg::simd::active();
        (void)tg::memory_limit();
        if (bench.chosen()) return tg::cmd_bench(bench_args);
        auto count = [](const char* option, const std::string& v) {
            const std::int64_t n = tg::parse_byte_count(v);
            if (n < 1) tg::fail(option + 2, option, " '", v, "' is not a positive count (e.g. 8G, 1000000)");
            return n;
        };
        if (!memory_limit.empty()) tg::set_memory_limit(count("--memory-limit", memory_limit));
        const double limit =  // tapegrad/spec/run_case.hpp
            work_limit.empty() ? tg::kDefaultWorkLimit : static_cast<double>(count("--work-limit", work_limit));
        if (run.chosen()) return tg::cmd_run(path, limit);
        if (explain.chosen()) return tg::cmd_explain(path);
        return tg::cmd_gradcheck(path, limit);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", tg::error_line(e).c_str());
        return 1;
    } catch (...) {
        std::fprintf(stderr, "error: unexpected failure\n");
        return 1;
    }
}
