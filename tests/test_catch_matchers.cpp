// The Catch2 matchers users put in their own test suites (tapegrad/autograd/catch_matchers.hpp):
// a correct op passes each, and an op with a planted backward mistake fails with the report.
#include "tapegrad/autograd/catch_matchers.hpp"

#include "tapegrad/autograd/ops.hpp"

using namespace tg;
using namespace tg::ag;
using tg::test::PassesAdjointCheck;
using tg::test::PassesGradcheck;
using tg::test::PassesGradgradcheck;

namespace {

// x ↦ x·x with a correct backward (2·x·g), or with a planted mistake (x·g).
Variable square(const Variable& x, bool wrong) {
    return record("square", mul(x, x).value(), {x}, {.inputs = {0}}, [wrong](const SavedContext& c, const Variable& g) -> Grads {
        const Variable x0 = c.input(0);
        return {wrong ? mul(x0, g) : scale(mul(x0, g), 2)};
    });
}

}  // namespace

TEST_CASE("Catch2 matchers: a correct op passes gradcheck, gradgradcheck and the adjoint check", "[matchers]") {
    const std::vector<Tensor> in{Tensor::from({2, 2}, {0.5, -1, 2, 0.25}, DType::f64),
                                 Tensor::from({2, 2}, {1, 2, 3, 4}, DType::f64)};
    const Function f = [](const std::vector<Variable>& v) { return add(square(v[0], false), mul(v[0], v[1])); };
    CHECK_THAT(f, PassesGradcheck(in));
    CHECK_THAT(f, PassesGradgradcheck(in, {.names = {"x", "w"}}));
    const Function lin = [](const std::vector<Variable>& v) { return mul(v[0], v[1]); };  // linear in each
    CHECK_THAT(lin, PassesAdjointCheck(in, 0));
    CHECK_THAT(lin, PassesAdjointCheck(in, 1));
}

TEST_CASE("Catch2 matchers: a planted backward mistake fails and the description carries the report", "[matchers]") {
    const std::vector<Tensor> in{Tensor::from({3}, {0.5, -1, 2}, DType::f64)};
    const Function bad = [](const std::vector<Variable>& v) { return square(v[0], true); };
    const auto m = PassesGradcheck(in, {.names = {"x"}});
    CHECK_FALSE(m.match(bad));
    const std::string d = m.describe();
    CHECK_THAT(d, Catch::Contains("passes gradcheck") && Catch::Contains("FAIL") && Catch::Contains("x"));
}
