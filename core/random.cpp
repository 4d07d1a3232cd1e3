#include "tapegrad/core/random.hpp"

#include <cmath>
#include <numbers>

namespace tg {

Generator::Generator(std::uint64_t seed) : engine_(seed), seed_(seed) {}

Generator::Generator(const Generator& other) {
    std::lock_guard<std::mutex> lock(other.mutex_);
    engine_ = other.engine_;
    seed_ = other.seed_;
    has_spare_ = other.has_spare_;
    spare_ = other.spare_;
}

Generator& Generator::operator=(const Generator& other) {
    if (this == &other) return *this;
    std::scoped_lock lock(mutex_, other.mutex_);
    engine_ = other.engine_;
    seed_ = other.seed_;
    has_spare_ = other.has_spare_;
    spare_ = other.spare_;
    return *this;
}

void Generator::manual_seed(std::uint64_t seed) {
    std::lock_guard<std::mutex> lock(mutex_);
    engine_.seed(seed);
    seed_ = seed;
    has_spare_ = false;
}

std::uint64_t Generator::initial_seed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return seed_;
}

std::uint64_t Generator::next_u64() {
    std::lock_guard<std::mutex> lock(mutex_);
    return engine_();
}

double Generator::uniform() {
    std::lock_guard<std::mutex> lock(mutex_);
    return uniform_locked();
}

double Generator::normal() {
    std::lock_guard<std::mutex> lock(mutex_);
    return normal_locked();
}

void Generator::fill_uniform(std::span<double> out, double lo, double hi) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (double& v : out) v = lo + (hi - lo) * uniform_locked();
}

void Generator::fill_normal(std::span<double> out, double mean, double stddev) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (double& v : out) v = mean + stddev * normal_locked();
}

double Generator::uniform_locked() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

// Box-Muller: two uniforms give two independent standard normals.
double Generator::normal_locked() {
    if (has_spare_) {
        has_spare_ = false;
        return spare_;
    }
    const double u1 = 1.0 - uniform_locked();  // in (0, 1]: log is finite
    const double u2 = uniform_locked();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double a = 2.0 * std::numbers::pi * u2;
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
}

namespace {
thread_local Generator* t_scoped = nullptr;
}

Generator& default_generator() {
    if (t_scoped) return *t_scoped;
    static Generator g;
    return g;
}

GeneratorScope::GeneratorScope(Generator& gen) : previous_(t_scoped) { t_scoped = &gen; }
GeneratorScope::~GeneratorScope() { t_scoped = previous_; }

void manual_seed(std::uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace tg
