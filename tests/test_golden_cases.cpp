// Runs every case folder of tests/golden/cases through `tapegrad run`, as an external
// conformance suite would. The folders are written by tests/golden/gen_goldens.py from the
// PyTorch oracle of OPS.md section 8 and committed, so this test needs neither Python nor
// torch. The checks are those of /work/shared/conformance/run.py:
//   success cases: exit 0; every requested .npy exists with the expected dtype and shape and
//     matches expected/<file> within expected/tol.json (|a-e| <= atol + rtol*|e|; NaN must be
//     NaN, +-inf must match);
//   error cases (expected/error.json): exit 1, stderr exactly one line starting "error:" that
//     contains one of stderr_any, and no file created;
//   always: no signal, no hang, no sanitizer report.
// Each case runs in a private copy (without expected/) from an unrelated working directory,
// since paths in a case are relative to the case file. Two cases run at a time.
// Under the sanitizers a launch of the instrumented CLI costs far more than the case itself,
// so there one case in eight runs as a process and the others in-process through
// tg::run_case (tapegrad/spec/run_case.hpp), which is all of `tapegrad run` but the printing of the
// error line; the optimized build runs every case as a process.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tapegrad/core/npy.hpp"
#include "tapegrad/spec/run_case.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr double kTimeoutSeconds = 20.0;

std::string slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

json load_json(const fs::path& p, json fallback) {
    if (!fs::exists(p)) return fallback;
    return json::parse(slurp(p));
}

// Paths (relative to the case file) that the case asks tapegrad to write; best effort, since
// some cases are deliberately malformed.
std::vector<std::string> requested_outputs(const fs::path& case_path) {
    std::vector<std::string> outs;
    json c;
    try {
        c = json::parse(slurp(case_path));
    } catch (const json::exception&) {
        return outs;
    }
    if (!c.is_object()) return outs;
    if (c.contains("output") && c["output"].is_string()) outs.push_back(c["output"].get<std::string>());
    if (c.contains("grad_inputs") && c["grad_inputs"].is_array())
        for (const json& g : c["grad_inputs"])
            if (g.is_string()) outs.push_back(g.get<std::string>());
    return outs;
}

std::set<std::string> snapshot(const fs::path& root) {
    std::set<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(root))
        if (!e.is_directory()) files.insert(fs::relative(e.path(), root).string());
    return files;
}

struct Exit {
    int code = -1;    // exit status when the process exited normally
    int signal = 0;   // the terminating signal, or 0
    bool timed_out = false;
};

// The child's environment. Idle OpenMP threads spin by default; hundreds of tiny runs on a
// shared 2-core machine then spend most of their CPU spinning, so passive waiting is asked
// for unless the user chose otherwise.
std::vector<std::string> child_environment() {
    std::vector<std::string> env;
    bool has_wait_policy = false;
    for (char** e = environ; *e; ++e) {
        env.emplace_back(*e);
        has_wait_policy = has_wait_policy || env.back().rfind("OMP_WAIT_POLICY=", 0) == 0;
    }
    if (!has_wait_policy) env.emplace_back("OMP_WAIT_POLICY=passive");
    return env;
}

// `tapegrad run` in this process: an exception becomes the CLI's one `error:` line and exit 1.
Exit run_in_process(const fs::path& case_path, const fs::path& err_path) {
    try {
        tg::run_case(case_path.string());
        std::ofstream(err_path, std::ios::trunc);
        return {0};
    } catch (const std::exception& e) {
        std::ofstream(err_path, std::ios::trunc) << tg::error_line(e) << "\n";
        return {1};
    }
}

constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    true;
#else
    false;
#endif

// posix_spawn rather than std::system: no shell quoting, no fork of a large (sanitized)
// process, and a process group of its own that can be killed on a hang.
Exit run_tapegrad(const fs::path& case_path, const fs::path& cwd, const fs::path& err_path,
                  const std::vector<std::string>& env) {
    std::vector<char*> envp;
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    std::string exe = TAPEGRAD_EXE, run = "run", cp = case_path.string();
    char* argv[] = {exe.data(), run.data(), cp.data(), nullptr};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, exe.c_str(), &fa, &attr, argv, envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) return {};
    const auto start = std::chrono::steady_clock::now();
    auto nap = std::chrono::microseconds(100);
    Exit r;
    for (;;) {
        int status = 0;
        const pid_t w = ::waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
            if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
            return r;
        }
        if (w < 0) return r;
        if (std::chrono::steady_clock::now() - start > std::chrono::duration<double>(kTimeoutSeconds)) {
            ::kill(-pid, SIGKILL);
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            r.timed_out = true;
            return r;
        }
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, std::chrono::microseconds(5000));
    }
}

std::string one_line(std::string s, std::size_t n = 240) {
    for (char& c : s)
        if (c == '\n' || c == '\r') c = '|';
    return s.size() > n ? s.substr(0, n) + "..." : (s.empty() ? "<empty>" : s);
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string index_str(std::size_t k, const tg::Shape& shape) {
    std::vector<std::int64_t> idx(shape.size());
    for (std::size_t a = shape.size(); a-- > 0;) {
        const auto d = static_cast<std::size_t>(shape[a]);
        idx[a] = d ? static_cast<std::int64_t>(k % d) : 0;
        k = d ? k / d : 0;
    }
    return tg::shape_str(idx);
}

// Empty when `actual` matches `expected` within tol, else the reason.
std::string compare(const fs::path& actual, const fs::path& expected, const json& tol) {
    const std::string name = actual.filename().string();
    tg::Tensor a;
    try {
        a = tg::read_npy(actual.string(), name);
    } catch (const std::exception& e) {
        return "cannot read output " + name + " as .npy (" + e.what() + ")";
    }
    const tg::Tensor e = tg::read_npy(expected.string(), "expected");
    if (a.dtype() != e.dtype())
        return name + ": dtype " + tg::dtype_name(a.dtype()) + ", expected " + tg::dtype_name(e.dtype());
    if (a.shape() != e.shape()) return name + ": shape " + tg::shape_str(a.shape()) + ", expected " + tg::shape_str(e.shape());
    const double rtol = tol.value("rtol", 0.0), atol = tol.value("atol", 0.0);
    const std::vector<double> av = a.values(), ev = e.values();
    std::size_t nbad = 0, first = 0;
    double maxerr = 0;
    for (std::size_t k = 0; k < ev.size(); ++k) {
        const double x = av[k], y = ev[k];
        if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) != std::isnan(y)) return name + ": NaN mismatch at " + index_str(k, e.shape());
            continue;
        }
        if (std::isinf(x) || std::isinf(y)) {
            if (x != y) return name + ": inf mismatch at " + index_str(k, e.shape());
            continue;
        }
        const double err = std::fabs(x - y);
        maxerr = std::max(maxerr, err);
        if (err > atol + rtol * std::fabs(y) && nbad++ == 0) first = k;
    }
    if (!nbad) return "";
    std::ostringstream os;
    os << name << ": " << nbad << " of " << ev.size() << " values differ; first at " << index_str(first, e.shape())
       << ": got " << av[first] << ", expected " << ev[first] << " (|diff| " << std::fabs(av[first] - ev[first])
       << " > tol " << atol + rtol * std::fabs(ev[first]) << "; max |diff| " << maxerr << ")";
    return os.str();
}

// Empty on pass, else a one-line reason (the logic of run.py's run_one); in_process runs the
// case through tg::run_case instead of the CLI.
std::string check_case(const fs::path& cdir, const fs::path& work, const std::vector<std::string>& env, bool in_process) {
    const fs::path exp_dir = cdir / "expected";
    const json err_spec = load_json(exp_dir / "error.json", json{{"expect", "ok"}});
    const json tol = load_json(exp_dir / "tol.json", json::object());
    const std::string mode = err_spec.value("expect", "ok");

    fs::remove_all(work);
    const fs::path cwork = work / "case", cwd = work / "cwd";
    fs::create_directories(cwork);
    fs::create_directories(cwd);
    for (const auto& e : fs::directory_iterator(cdir))
        if (e.path().filename() != "expected")
            fs::copy(e.path(), cwork / e.path().filename(), fs::copy_options::recursive);
    const fs::path case_path = cwork / "case.json";
    const std::vector<std::string> outs = requested_outputs(case_path);
    for (const std::string& o : outs)
        if (fs::exists(cwork / o)) return "harness: output " + o + " exists before the run";
    const std::set<std::string> before = snapshot(cwork);

    const Exit x = in_process ? run_in_process(case_path, work / "stderr.txt") : run_tapegrad(case_path, cwd, work / "stderr.txt", env);
    const std::string err = slurp(work / "stderr.txt");
    if (x.timed_out) return "timeout";
    if (x.signal) return "crashed with signal " + std::to_string(x.signal) + "; stderr: " + one_line(err);
    if (x.code < 0) return "could not run " TAPEGRAD_EXE;
    for (const char* mark : {"AddressSanitizer", "LeakSanitizer", "ThreadSanitizer", "MemorySanitizer",
                             "UndefinedBehaviorSanitizer", "runtime error:"})
        if (err.find(mark) != std::string::npos) return "sanitizer report on stderr: " + one_line(err);
    std::vector<std::string> created;
    for (const std::string& f : snapshot(cwork))
        if (!before.count(f)) created.push_back(f);

    const bool want_error = mode == "error" || (mode == "ok_or_error" && x.code != 0);
    if (want_error) {
        if (x.code != 1)
            return "expected exit 1 (invalid case: " + err_spec.value("why", std::string("?")) + "), got " +
                   std::to_string(x.code) + "; stderr: " + one_line(err);
        std::string line = err;
        if (!line.empty() && line.back() == '\n') line.pop_back();
        if (line.find_first_of("\n\r\v\f") != std::string::npos || line.rfind("error:", 0) != 0 ||
            line.find_first_not_of(" \t") == std::string::npos)
            return "stderr must be exactly one line starting with 'error:', got '" + one_line(err) + "'";
        if (!created.empty()) return "error exit but files were created: " + created.front();
        if (err_spec.contains("stderr_any") && !err_spec["stderr_any"].empty()) {
            bool named = false;
            for (const json& s : err_spec["stderr_any"])
                named = named || lower(line).find(lower(s.get<std::string>())) != std::string::npos;
            if (!named) return "error line does not name the offending item (any of " + err_spec["stderr_any"].dump() +
                               "): '" + line + "'";
        }
        return "";
    }
    if (x.code != 0) return "exit " + std::to_string(x.code) + ", expected 0; stderr: " + one_line(err);
    for (const std::string& o : outs) {
        const fs::path ap = cwork / o, ep = exp_dir / fs::path(o).filename();
        if (!fs::exists(ep)) return "harness: no expected file for " + o;
        if (!fs::exists(ap)) return "output " + o + " was not written";
        const std::string why = compare(ap, ep, tol.value(fs::path(o).filename().string(), json::object()));
        if (!why.empty()) return why;
    }
    return "";
}

}  // namespace

TEST_CASE("golden cases from the PyTorch oracle pass through tapegrad run", "[golden]") {
    const fs::path root = fs::path(TAPEGRAD_SOURCE_DIR) / "tests" / "golden" / "cases";
    REQUIRE(fs::is_directory(root));
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(root))
        if (fs::is_regular_file(e.path() / "case.json")) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    // gen_goldens.py writes about 670; far fewer means the folder was damaged or not regenerated.
    REQUIRE(cases.size() >= 500);

    std::string tmpl = (fs::temp_directory_path() / "tapegrad_golden_XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    const fs::path tmp = tmpl;
    const std::vector<std::string> env = child_environment();

    // Two workers run the processes (each case in its own folder); the checks stay on this
    // thread because Catch2's assertions are not thread-safe.
    std::vector<std::string> why(cases.size());
    std::atomic<std::size_t> next{0};
    auto worker = [&](int id) {
        for (std::size_t i; (i = next++) < cases.size();) {
            try {
                why[i] = check_case(cases[i], tmp / ("work" + std::to_string(id)), env, kSanitized && i % 8 != 0);
            } catch (const std::exception& e) {
                why[i] = std::string("harness error: ") + e.what();
            }
        }
    };
    std::thread second(worker, 1);
    worker(0);
    second.join();
    fs::remove_all(tmp);

    std::size_t passed = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const std::string name = cases[i].filename().string();
        const std::string verdict = name + (why[i].empty() ? ": ok" : ": " + why[i]);
        CHECK(verdict == name + ": ok");
        passed += why[i].empty();
    }
    INFO(passed << " of " << cases.size() << " golden cases passed");
    CHECK(passed == cases.size());
}
