// Random numbers: a seedable generator and the one global default.
//
// tg::Generator wraps std::mt19937_64 (whose output sequence the C++ standard fixes) and
// derives uniform and normal draws from it with its own formulas (53-bit uniforms,
// Box-Muller normals), so a seed gives the same numbers with every compiler and standard
// library.
//
// Thread safety: every Generator holds a mutex, and each call (one number, or one whole
// fill) takes it. So the global default_generator() can be used from several threads at
// once with no data race (e.g. two threads building models); each tensor's draws are
// consecutive, but which thread gets which part of the sequence depends on scheduling. For
// reproducible results across threads give each thread its own Generator.
#pragma once
#include <cstdint>
#include <mutex>
#include <random>
#include <span>

namespace tg {

class Generator {
public:
    static constexpr std::uint64_t kDefaultSeed = 5489;  // std::mt19937_64's own default

    explicit Generator(std::uint64_t seed = kDefaultSeed);
    // Copies share nothing: the copy continues the same sequence independently.
    Generator(const Generator& other);
    Generator& operator=(const Generator& other);

    // Restarts the sequence from `seed`.
    void manual_seed(std::uint64_t seed);
    std::uint64_t initial_seed() const;  // the last seed given

    std::uint64_t next_u64();  // 64 random bits
    double uniform();          // in [0, 1), a multiple of 2^-53
    double normal();           // standard normal (mean 0, variance 1)

    // Fill a whole buffer under one lock: U[lo, hi), or N(mean, std^2).
    void fill_uniform(std::span<double> out, double lo = 0, double hi = 1);
    void fill_normal(std::span<double> out, double mean = 0, double stddev = 1);

private:
    double uniform_locked();
    double normal_locked();

    mutable std::mutex mutex_;
    std::mt19937_64 engine_;
    std::uint64_t seed_;
    bool has_spare_ = false;  // Box-Muller makes normals in pairs; the second waits here
    double spare_ = 0;
};

// The generator the factories and the layers' initialisation use when none is given: the
// process-wide one (seeded with Generator::kDefaultSeed at start, so a program is
// reproducible without seeding), unless a GeneratorScope of this thread names another.
Generator& default_generator();
// Reseeds default_generator().
void manual_seed(std::uint64_t seed);

// While it lives, default_generator() in this thread is `gen`: a thread that builds and
// trains its own model draws from its own sequence, whatever other threads do.
//   tg::Generator gen(42);
//   tg::GeneratorScope scope(gen);
//   nn::Linear layer(4, 2);   // initialised from gen
class GeneratorScope {
public:
    explicit GeneratorScope(Generator& gen);
    ~GeneratorScope();
    GeneratorScope(const GeneratorScope&) = delete;
    GeneratorScope& operator=(const GeneratorScope&) = delete;

private:
    Generator* previous_;
};

}  // namespace tg
