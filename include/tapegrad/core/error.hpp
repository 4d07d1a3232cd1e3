// The one exception type: it names what was wrong (an attribute, input or dimension)
// so that the command line and the tests can say which argument is at fault.
#pragma once
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tg {

// Keeps the first and last part of an over-long message (user values echoed in full, such
// as a 50 MB op name, would otherwise flood a terminal or a log).
std::string clip_message(const std::string& message, std::size_t max_bytes = 2000);

class Error : public std::runtime_error {
public:
    Error(std::string key, const std::string& message)
        : std::runtime_error(clip_message(message)), key_(clip_message(key, 200)) {}
    // The offending attribute, input or dimension, e.g. "strides", "filter", "output_shape".
    const std::string& key() const noexcept { return key_; }

private:
    std::string key_;
};

// "[1, 2, 3]"
std::string shape_str(const std::vector<std::int64_t>& shape);

// Prints a shape (tg::Shape is std::vector<std::int64_t>) as shape_str does: "[2, 3]".
// Declared here, before fail(), so fail("op: input ", x.shape()) prints shapes. Shape lives
// in namespace std for argument-dependent lookup, so outside namespace tg this operator is
// found only with `using namespace tg` (or `using tg::operator<<`); Catch2 keeps printing
// vectors its own way ({ 2, 3 }).
std::ostream& operator<<(std::ostream& os, const std::vector<std::int64_t>& shape);

// Builds a message from any streamable pieces: fail("strides", "Convolution: strides[", i, "] is ", v).
template <class... Parts>
[[noreturn]] void fail(const std::string& key, const Parts&... parts) {
    std::ostringstream os;
    (os << ... << parts);
    throw Error(key, os.str());
}

// a * b for sizes, failing with `key` instead of wrapping around.
std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& key);

}  // namespace tg
