// docs/ops.md's blocks, compiled and run (ctest: docs.snippet.ops).
#include <tapegrad/tapegrad.hpp>

#include <iostream>
#include <sstream>

using namespace tg;

int main() {
    // doc-begin: explain-layer
    nn::ConvTranspose up(8, 4, nn::ConvOptions{3}.stride(2).output_padding(1));
    const ConvExplanation e = up.explain({16, 8, 5});  // an input [N, C, X]
    std::cout << e;                                    // what `tapegrad explain` prints
    const ConvAxisExplanation& axis = e.axes[0];       // or read the numbers
    std::cout << "L " << axis.L << ", output size " << axis.Y << ", " << e.warnings.size() << " warning(s)\n";
    // doc-end: explain-layer
    // L = 2·(5−1) + 3 = 11, Y = L − 0 − 0 + 1 = 12, and the last position lies past L.
    std::ostringstream text;
    text << e;
    if (axis.L != 11 || axis.Y != 12 || e.output != Shape{16, 4, 12} || e.warnings.size() != 1 ||
        text.str().find("warning: axis 0: the last 1 output position(s)") == std::string::npos) {
        std::cerr << "explain-layer block: unexpected explanation\n" << text.str();
        return 1;
    }
    return 0;
}
