#include "tapegrad/core/error.hpp"

#include <limits>
#include <ostream>

namespace tg {

std::string shape_str(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

std::ostream& operator<<(std::ostream& os, const std::vector<std::int64_t>& shape) { return os << shape_str(shape); }

std::string clip_message(const std::string& message, std::size_t max_bytes) {
    if (message.size() <= max_bytes) return message;
    const std::size_t keep = max_bytes / 2;
    return message.substr(0, keep) + " [... " + std::to_string(message.size() - 2 * keep) + " bytes cut ...] " +
           message.substr(message.size() - keep);
}

std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& key) {
    std::int64_t r;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
        fail(key, key, ": size product ", a, " * ", b, " overflows int64");
    return r;
}

}  // namespace tg
