// tape_overhead: what the tape costs per recorded op. A chain of --ops element-wise ops on a
// one-element f32 variable (so the arithmetic itself costs next to nothing) is run three ways:
// with grad mode off (the ops alone), recorded (ops + tape), and recorded then
// back-propagated. The figures are medians over --reps chains, in µs per op:
//   record   = (recorded − grad off) / ops   the tape's own forward cost
//   backward = backward pass / ops           replaying the tape (each step runs the op's backward)
//
//     build/release/tape_overhead [--ops 1000] [--reps 200] [--json]
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include "cli/options.hpp"
#include "tapegrad/tapegrad.hpp"

namespace {

using namespace tg;
using clock_type = std::chrono::steady_clock;

double us_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
}

// The chain: three kinds of op in turn (a binary op with a constant, a unary map, a scalar
// affine map), each of which records one node.
ag::Variable chain(const ag::Variable& x, const ag::Variable& c, int ops) {
    ag::Variable y = x;
    for (int i = 0; i < ops; ++i) {
        switch (i % 3) {
            case 0: y = y * c; break;
            case 1: y = ag::tanh(y); break;
            default: y = y * 0.5 + 0.25; break;
        }
    }
    return y;
}

}  // namespace

int main(int argc, char** argv) {
    int ops = 1000, reps = 200;
    bool as_json = false;
    cli::Parser cl("tape_overhead", "Times the tape's own cost per recorded op on a chain of element-wise ops");
    cl.option("--ops", ops, "ops per chain", 3, 1000000);
    cl.option("--reps", reps, "chains timed (the median is reported)", 3, 100000);
    cl.flag("--json", as_json, "one JSON object");
    try {
        if (!cl.parse(argc, argv)) return 0;
        set_num_threads(1);
        const ag::Variable c = ag::constant(Tensor::full({1}, 1.0001));
        std::vector<double> off, on, back;
        for (int r = 0; r < reps + 2; ++r) {  // the first two are warm-up
            ag::Variable x = ag::param(Tensor::full({1}, 0.3), "x");
            auto t0 = clock_type::now();
            {
                ag::NoGradGuard no_grad;
                (void)chain(x, c, ops);
            }
            const double t_off = us_since(t0);
            t0 = clock_type::now();
            ag::Variable y = chain(x, c, ops);
            const double t_on = us_since(t0);
            t0 = clock_type::now();
            y.backward();
            const double t_back = us_since(t0);
            if (r >= 2) {
                off.push_back(t_off);
                on.push_back(t_on);
                back.push_back(t_back);
            }
        }
        const double m_off = median(off) / ops, m_on = median(on) / ops, m_back = median(back) / ops;
        if (as_json) {
            std::cout << nlohmann::json{{"ops", ops}, {"reps", reps}, {"grad_off_us_per_op", m_off},
                                        {"recorded_us_per_op", m_on}, {"record_overhead_us_per_op", m_on - m_off},
                                        {"backward_us_per_op", m_back}}
                             .dump()
                      << "\n";
        } else {
            std::printf("chain of %d ops on a [1] f32 variable, median of %d chains, µs per op:\n", ops, reps);
            std::printf("  grad off (ops alone)   %7.3f\n", m_off);
            std::printf("  recorded (ops + tape)  %7.3f   tape's own cost %.3f\n", m_on, m_on - m_off);
            std::printf("  backward               %7.3f\n", m_back);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
