// libFuzzer target: a case file (tapegrad/spec/case_file.hpp) through the op table, the padding rules,
// the geometry and the op itself, on tiny tensors. The fuzzer writes the JSON; the inputs it
// may name are small .npy files made once at start-up (1-D, 2-D and 3-D data, filters of
// several layouts, output_shape lists, a bias, a gradient). Every input must run or raise
// tg::Error. Results are bounded (2^16 elements, 2^24 multiply-adds) so that every
// execution stays fast; bigger ones are resolved and validated but not run.
#include <cstdio>
#include <cstdlib>

#include "fuzz_file.hpp"
#include "tapegrad/core/env.hpp"
#include "tapegrad/core/npy.hpp"
#include "tapegrad/spec/case_file.hpp"
#include "tapegrad/spec/opset.hpp"

namespace {

void make_inputs() {
    using tg::DType;
    using tg::Tensor;
    struct F {
        const char* name;
        tg::Shape shape;
        DType dtype;
    };
    const F files[] = {
        {"x1.npy", {1, 2, 5}, DType::f32},       {"x2.npy", {1, 2, 4, 4}, DType::f32},
        {"x3.npy", {1, 2, 3, 3, 3}, DType::f32}, {"xn.npy", {1, 5, 5, 2}, DType::f32},
        {"w1.npy", {2, 2, 3}, DType::f32},       {"w2.npy", {2, 2, 3, 3}, DType::f32},
        {"w3.npy", {2, 2, 2, 2, 2}, DType::f32}, {"wg.npy", {2, 1, 1, 3, 3}, DType::f32},
        {"wx.npy", {3, 3, 2, 2}, DType::f32},    {"b.npy", {2}, DType::f32},
        {"h.npy", {1, 2, 5}, DType::f16},        {"d.npy", {1, 2, 5}, DType::f64},
    };
    for (const F& f : files) {
        std::vector<double> v(static_cast<std::size_t>(tg::shape_numel(f.shape)));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 7) - 3;
        tg::write_npy(tg::fuzz::scratch_dir() + "/" + f.name, Tensor::from(f.shape, v, f.dtype));
    }
    tg::write_npy(tg::fuzz::scratch_dir() + "/s1.npy", Tensor::from({1}, {9}, DType::i64));
    tg::write_npy(tg::fuzz::scratch_dir() + "/s2.npy", Tensor::from({2}, {8, 8}, DType::i32));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const bool ready = (make_inputs(), true);
    (void)ready;
    const std::string path = tg::fuzz::put_file("case.json", data, size);
    try {
        const tg::CaseFile c = tg::read_case(path);
        tg::DType dt;
        const std::vector<tg::Tensor> in = tg::load_inputs(c, dt);
        const tg::ResolvedOp r = tg::resolve_op(c.opset, c.op, c.attrs, in);
        const tg::ConvGeometry& g = r.geom;
        if (tg::shape_numel(r.result_shape) > (1 << 16) || g.macs() > (1 << 24)) return 0;
        if (c.grad_output) {
            const tg::OpRun run = tg::run_op_with_grads(r, in, tg::Tensor::full(r.result_shape, 0.5, dt));
            if (run.result.shape() != r.result_shape) std::abort();
        } else if (tg::run_op(r, in).shape() != r.result_shape) {
            std::abort();
        }
        if (tg::env::text("TAPEGRAD_FUZZ_VERBOSE")) std::fprintf(stderr, "ran %s -> %s\n", r.name.c_str(), tg::shape_str(r.result_shape).c_str());
    } catch (const tg::Error& e) {
        // TAPEGRAD_FUZZ_VERBOSE=1 shows what each corpus file does, for corpus upkeep.
        if (tg::env::text("TAPEGRAD_FUZZ_VERBOSE")) std::fprintf(stderr, "error: %s\n", e.what());
    }
    return 0;
}
