// Catch2 v2 matchers (2.13, as Debian 12 ships; Catch2 v3 renamed the headers and the
// matcher base class, so these do not compile against it) over the gradient checks, for
// users' own test suites. Optional: include it only from test code that links Catch2.
//
//   #include <tapegrad/autograd/catch_matchers.hpp>
//   using tg::test::PassesGradcheck;
//   const tg::ag::Function f = [](const std::vector<tg::ag::Variable>& v) { return my_op(v[0], v[1]); };
//   CHECK_THAT(f, PassesGradcheck({x, w}));
//   CHECK_THAT(f, PassesGradgradcheck({x, w}, {.names = {"x", "w"}}));
//   CHECK_THAT(f, PassesAdjointCheck({x, w}, /*linear_input=*/0));
//
// A failure prints the check's whole report (tapegrad/autograd/gradcheck.hpp): the one-line verdict
// with the first failing row, then every row with the analytic and numeric values, the
// error, the tolerance and the worst element, and the legend once.
#pragma once
#if defined(CATCH_VERSION_MAJOR) && CATCH_VERSION_MAJOR != 2
#error "tapegrad/autograd/catch_matchers.hpp needs Catch2 v2 (2.13, Debian 12's catch2); with Catch2 v3 call tg::ag::gradcheck and CHECK(report.ok) after INFO(report.table())"
#endif
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/autograd/gradcheck.hpp"

namespace tg::test {

// Runs one check on the function it is matched against and keeps the report for the message.
class CheckMatcher : public Catch::MatcherBase<ag::Function> {
public:
    using Check = std::function<ag::CheckReport(const ag::Function&)>;
    CheckMatcher(std::string what, Check check) : what_(std::move(what)), check_(std::move(check)) {}

    bool match(const ag::Function& f) const override {
        report_ = check_(f);
        return report_.ok;
    }
    // The verdict first (Catch2 prints it right after the matched object), then the report.
    std::string describe() const override { return what_ + ": " + report_.table(); }
    const ag::CheckReport& report() const { return report_; }

private:
    std::string what_;
    Check check_;
    mutable ag::CheckReport report_;
};

// Finite differences against the tape's Jᵀv (ag::gradcheck).
inline CheckMatcher PassesGradcheck(std::vector<Tensor> inputs, ag::CheckOptions opt = {}) {
    return {"passes gradcheck", [in = std::move(inputs), opt](const ag::Function& f) { return ag::gradcheck(f, in, opt); }};
}

// The same for the second derivatives (ag::gradgradcheck).
inline CheckMatcher PassesGradgradcheck(std::vector<Tensor> inputs, ag::CheckOptions opt = {}) {
    return {"passes gradgradcheck",
            [in = std::move(inputs), opt](const ag::Function& f) { return ag::gradgradcheck(f, in, opt); }};
}

// ⟨A x, y⟩ = ⟨x, Aᵀ y⟩ for f linear in inputs[linear_input] (ag::check_adjoint).
inline CheckMatcher PassesAdjointCheck(std::vector<Tensor> inputs, int linear_input, ag::CheckOptions opt = {}) {
    return {"passes the adjoint check in input " + std::to_string(linear_input),
            [in = std::move(inputs), linear_input, opt](const ag::Function& f) {
                return ag::check_adjoint(f, in, linear_input, opt);
            }};
}

}  // namespace tg::test
