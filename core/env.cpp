#include "tapegrad/core/env.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "tapegrad/core/error.hpp"
#include "tapegrad/core/workspace.hpp"

namespace tg::env {

namespace {

// The value as an error message shows it: at most 40 characters.
std::string shown(const std::string& v) { return v.size() > 40 ? v.substr(0, 40) + "..." : v; }

}  // namespace

std::optional<std::string> text(const char* name) {
    const char* e = std::getenv(name);
    if (!e || !*e) return std::nullopt;
    return std::string(e);
}

std::optional<std::int64_t> integer(const char* name, std::int64_t lo, std::int64_t hi) {
    const std::optional<std::string> v = text(name);
    if (!v) return std::nullopt;
    std::int64_t n = 0;
    const char* end = v->data() + v->size();
    const auto [p, ec] = std::from_chars(v->data(), end, n);
    if (ec != std::errc() || p != end || n < lo || n > hi)
        fail(name, name, "='", shown(*v), "' is not an integer in ", lo, "..", hi);
    return n;
}

std::optional<std::string> choice(const char* name, std::initializer_list<const char*> choices) {
    const std::optional<std::string> v = text(name);
    if (!v) return std::nullopt;
    std::string list;
    std::size_t i = 0;
    for (const char* c : choices) {
        if (*v == c) return v;
        list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(c);
        ++i;
    }
    fail(name, name, "='", shown(*v), "' must be ", list);
}

std::optional<std::int64_t> bytes(const char* name) {
    const std::optional<std::string> v = text(name);
    if (!v) return std::nullopt;
    const std::int64_t b = parse_byte_count(*v);
    if (b < 1) fail(name, name, "='", shown(*v), "' is not a byte count (e.g. 8G, 512M, 1000000)");
    return b;
}

}  // namespace tg::env
