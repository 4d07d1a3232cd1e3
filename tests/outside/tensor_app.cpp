// A new user's tensor arithmetic, written against the installed package only (ctest builds
// it with find_package and runs it). Every number it checks is worked out by hand in the
// comments.
#include <tapegrad/tapegrad.hpp>

#include <iostream>

using namespace tg;

int main() {
    const Tensor a = arange(6).reshape({2, 3});                   // [[0, 1, 2], [3, 4, 5]]
    const Tensor b = Tensor::from({3}, {10, 20, 30});
    const Tensor c = a * 2.0 + b;                                  // [2, 3] with [3]: [[10, 22, 34], [16, 28, 40]]
    const Tensor d = where(c > 25.0, c, zeros({1}));               // [[0, 0, 34], [0, 28, 40]]
    const Tensor col = Tensor::from({2, 1}, {1, -1});
    const Tensor e = c * col;                                      // [2, 1] broadcast: [[10, 22, 34], [-16, -28, -40]]
    const Tensor s = sum(e, {1});                                  // [66, -84]
    const Tensor m = mean(c, {0});                                 // [13, 25, 37]
    const Tensor i = argmax(e, 1);                                 // [2, 0]
    std::cout << "c = " << c << "\nd = " << d << "\nrow sums of c * [[1], [-1]] = " << s << "\ncolumn means of c = " << m
              << "\nargmax per row = " << i << "\n";
    const bool ok = c.values() == std::vector<double>{10, 22, 34, 16, 28, 40} &&
                    d.values() == std::vector<double>{0, 0, 34, 0, 28, 40} &&
                    s.values() == std::vector<double>{66, -84} && m.values() == std::vector<double>{13, 25, 37} &&
                    i.values() == std::vector<double>{2, 0};
    std::cout << (ok ? "ok" : "WRONG") << "\n";
    return ok ? 0 : 1;
}
