// Several user threads using tapegrad at once: each builds and trains its own small model
// (Conv, Tanh, ConvTranspose, Adam) while tapegrad's OpenMP teams run inside its calls, and
// each ends with exactly the weights and losses of the same training run alone. The `tsan`
// preset runs these tests under ThreadSanitizer (tests/tsan.supp); the other builds run them
// as ordinary tests.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/core/blas.hpp"
#include "tapegrad/core/factories.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/optim.hpp"

using namespace tg;

namespace {

// Two threads per team, and a team for every kernel call however small (the models are
// kept small so that the test is quick under ThreadSanitizer); restores both settings.
struct Teams {
    int prev = num_threads();
    Teams() {
        set_num_threads(2);
        force_thread_teams(true);
    }
    ~Teams() {
        force_thread_teams(false);
        set_num_threads(prev);
    }
};

struct TrainRun {
    std::vector<double> losses;
    std::vector<std::pair<std::string, std::vector<double>>> weights;  // state_dict order
};

// Builds a 2-D convolutional autoencoder from `seed` (its weights and its data from its own
// Generator, made this thread's default by a GeneratorScope), trains it for a few Adam steps
// and returns every loss and the final weights.
TrainRun train(std::uint64_t seed, DType dtype) {
    Generator gen(seed);
    GeneratorScope scope(gen);
    nn::Sequential net{nn::Conv(2, 6, nn::ConvOptions{3, 3}.stride(2).padding(1).dtype(dtype)),  //
                       nn::Tanh(),
                       nn::ConvTranspose(6, 2, nn::ConvOptions{4, 4}.stride(2).padding(1).dtype(dtype))};
    const ag::Variable x = ag::constant(randn({3, 2, 12, 12}, dtype, gen));
    const ag::Variable target = ag::constant(randn({3, 2, 12, 12}, dtype, gen));
    nn::Adam opt(net.parameters(), 0.01);
    TrainRun r;
    for (int step = 0; step < 3; ++step) {
        opt.zero_grad();
        ag::Variable loss = ag::mse_loss(net(x), target);
        loss.backward();
        opt.step();
        r.losses.push_back(loss.value().values().at(0));
    }
    for (const auto& [name, t] : net.state_dict()) r.weights.emplace_back(name, t.values());
    return r;
}

// Runs train(seeds[i], dtypes[i]) on one thread each, all at once.
std::vector<TrainRun> train_concurrently(const std::vector<std::uint64_t>& seeds, const std::vector<DType>& dtypes) {
    std::vector<TrainRun> runs(seeds.size());
    std::vector<std::exception_ptr> errors(seeds.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < seeds.size(); ++i)
        threads.emplace_back([&, i] {
            try {
                runs[i] = train(seeds[i], dtypes[i]);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        });
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    return runs;
}

void check_same(const TrainRun& got, const TrainRun& want) {
    CHECK(got.losses == want.losses);  // bit for bit
    REQUIRE(got.weights.size() == want.weights.size());
    for (std::size_t i = 0; i < want.weights.size(); ++i) {
        INFO(want.weights[i].first);
        CHECK(got.weights[i].first == want.weights[i].first);
        CHECK(got.weights[i].second == want.weights[i].second);
    }
}

}  // namespace

TEST_CASE("two threads training their own models with thread teams match serial runs bit for bit", "[threads]") {
    const Teams teams;
    for (const DType dtype : {DType::f32, DType::f64}) {  // f32: tapegrad's GEMM; f64: OpenBLAS
        INFO("dtype " << dtype_name(dtype));
        const TrainRun serial_a = train(11, dtype), serial_b = train(12, dtype);
        REQUIRE(serial_a.losses != serial_b.losses);  // different models and data
        CHECK(serial_a.losses.back() < serial_a.losses.front());  // it trains

        const std::uint64_t teams_before = teams_started();
        const std::vector<TrainRun> both = train_concurrently({11, 12}, {dtype, dtype});
        CHECK(teams_started() > teams_before);  // the kernels ran in teams of two
        check_same(both[0], serial_a);
        check_same(both[1], serial_b);
    }
}

TEST_CASE("threads training f32 and f64 models at once with thread teams match serial runs", "[threads]") {
    const Teams teams;
    const TrainRun serial_f32 = train(21, DType::f32), serial_f64 = train(21, DType::f64);
    const std::uint64_t teams_before = teams_started();
    const std::vector<TrainRun> both = train_concurrently({21, 21}, {DType::f32, DType::f64});
    CHECK(teams_started() > teams_before);
    check_same(both[0], serial_f32);
    check_same(both[1], serial_f64);
}

TEST_CASE("GeneratorScope: a model built on another thread does not disturb this one's", "[threads][nn]") {
    std::vector<double> alone;
    {
        Generator g(5);
        GeneratorScope scope(g);
        alone = nn::Linear(4, 3).weight.value().values();
    }
    Generator g(5);
    GeneratorScope scope(g);
    std::thread scoped([] {
        Generator other(99);
        GeneratorScope s(other);
        nn::Linear(64, 64);
    });
    std::thread global([] { nn::Linear(64, 64); });  // draws from the shared default generator
    scoped.join();
    global.join();
    CHECK(nn::Linear(4, 3).weight.value().values() == alone);
}

TEST_CASE("a team starts from about 100 µs of work, from a millisecond's where its threads sleep", "[threads]") {
    // By hand from the rule in tapegrad/core/blas.hpp: OMP_WAIT_POLICY=passive (any case)
    // puts threads to sleep between parallel regions; unset, active or anything else spins.
    CHECK(kTeamMinFlops == 1.0e7);
    for (const char* sleeping : {"passive", "PASSIVE", "Passive"}) {
        CHECK(team_min_flops(sleeping) == 5.0e7);
        CHECK(team_threads_sleep(sleeping));
    }
    for (const char* spinning : {"", "active", "ACTIVE", "passive-ish"}) {
        CHECK(team_min_flops(spinning) == 1.0e7);
        CHECK_FALSE(team_threads_sleep(spinning));
    }
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    CHECK(team_min_flops() == team_min_flops(policy ? policy : ""));
    CHECK(team_threads_sleep() == team_threads_sleep(policy ? policy : ""));

    const int prev = num_threads();
    set_num_threads(2);
    const double least = team_min_flops();
    CHECK(team_size(least * 0.99, least) == 1);
    CHECK(team_size(least, least) == 2);
    set_num_threads(1);
    CHECK(team_size(least * 100, least) == 1);
    set_num_threads(prev);
}
