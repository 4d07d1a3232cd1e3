// What the command line of every tapegrad program shares (the `tapegrad` tool, the examples,
// the lessons, the benchmarks): CLI11 in one style. `--opt value` and `--opt=value` both
// work, `-h`/`--help` prints CLI11's help and exits 0, and every mistake is one tg::Error
// naming the option (main prints it as one `error:` line and exits 1): a value out of range,
// a missing value, and an unknown option or command, with the nearest valid name suggested.
// Header-only; not part of the installed library.
#pragma once
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tapegrad/core/error.hpp"

namespace tg::cli {

// A whole decimal integer from lo to hi.
inline CLI::Validator integer(std::int64_t lo, std::int64_t hi) {
    return CLI::Validator(
        [lo, hi](std::string& v) -> std::string {
            std::int64_t x = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
            if (v.empty() || ec == std::errc::invalid_argument || end != v.data() + v.size()) return "'" + v + "' is not an integer";
            if (ec == std::errc::result_out_of_range || x < lo || x > hi)
                return "'" + v + "' must be from " + std::to_string(lo) + " to " + std::to_string(hi);
            return {};
        },
        std::to_string(lo) + ".." + std::to_string(hi));
}

// A finite number from lo to hi.
inline CLI::Validator number(double lo, double hi) {
    return CLI::Validator(
        [lo, hi](std::string& v) -> std::string {
            char* end = nullptr;
            const double x = std::strtod(v.c_str(), &end);
            if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x)) return "'" + v + "' is not a number";
            if (x < lo || x > hi) return "'" + v + "' must be from " + CLI::detail::to_string(lo) + " to " + CLI::detail::to_string(hi);
            return {};
        },
        CLI::detail::to_string(lo) + ".." + CLI::detail::to_string(hi));
}

// One of `names`, spelled exactly.
inline CLI::Validator one_of(std::vector<std::string> names) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : "|") + n;
    return CLI::Validator(
        [names, list](std::string& v) -> std::string {
            if (std::find(names.begin(), names.end(), v) != names.end()) return {};
            return "'" + v + "' is not one of " + list;
        },
        list);
}

// A non-empty string (a path, a name).
inline const CLI::Validator non_empty = CLI::Validator(
    [](std::string& v) -> std::string { return v.empty() ? "needs a non-empty value" : std::string(); }, "");

// The edit distance between a and b (insertions, deletions, substitutions).
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

// The candidate nearest to `word` when it is close enough to be a typo (an edit distance of
// at most 2, or a third of its letters; or the start of the candidate), else "".
inline std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_d = SIZE_MAX;
    for (const std::string& c : candidates) {
        const std::size_t d = word.size() > 3 && c.rfind(word, 0) == 0 ? 0 : edit_distance(word, c);
        if (d < best_d) best = c, best_d = d;
    }
    return best_d <= std::max<std::size_t>(2, word.size() / 3) ? best : std::string();
}

namespace detail {

inline std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* o : app.get_options())
        if (!o->get_lnames().empty()) names.push_back("--" + o->get_lnames().front());
    return names;
}

// Refuses what CLI11 left over in `app` (allow_extras): an unknown option or a stray word.
inline void refuse_extras(const CLI::App& app, const std::string& program) {
    const std::vector<std::string> extra = app.remaining();
    if (extra.empty()) return;
    const std::string& w = extra.front();
    const std::string word = w.substr(0, w.find('='));
    const std::vector<CLI::App*> commands = const_cast<CLI::App&>(app).get_subcommands({});
    if (!commands.empty() && app.get_subcommands().empty() && !(word.size() > 1 && word[0] == '-')) {
        std::vector<std::string> names;
        std::string list;
        for (const CLI::App* c : commands) list += (list.empty() ? "" : ", ") + c->get_name(), names.push_back(c->get_name());
        const std::string near = nearest(word, names);
        fail("command", "unknown command '", word, "'", near.empty() ? "" : " (did you mean " + near + "?)",
             "; the commands are ", list);
    }
    if (word.size() > 1 && word[0] == '-') {
        const std::string near = nearest(word, option_names(app));
        fail(word, "unknown option '", word, "'", near.empty() ? "" : " (did you mean " + near + "?)", "; ", program,
             " --help lists the options");
    }
    fail(w, "unexpected argument '", w, "'; ", program, " --help lists the arguments");
}

}  // namespace detail

// Parses argv into `app` and its subcommands. Returns false when it printed the help (the
// program then exits 0); throws tg::Error for every mistake.
inline bool parse(CLI::App& app, int argc, const char* const* argv) {
    app.allow_extras();
    for (CLI::App* sub : app.get_subcommands({})) sub->allow_extras();
    const std::string program = app.get_name();
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(app.help().c_str(), stdout);  // the chosen command's help, when there is one
        return false;
    } catch (const CLI::CallForAllHelp&) {
        std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
        return false;
    } catch (const CLI::ParseError& e) {
        // CLI11's own words ("--threads: 1 required INT missing", "--epochs: '0' must be from
        // 1 to 100000"): they start with the option's name.
        const std::vector<CLI::App*> chosen = app.get_subcommands();
        fail("option", e.what(), "; ", program, chosen.empty() ? "" : " " + chosen.front()->get_name(), " --help lists the options");
    }
    for (const CLI::App* sub : app.get_subcommands()) detail::refuse_extras(*sub, program + " " + sub->get_name());
    detail::refuse_extras(app, program);
    return true;
}

}  // namespace tg::cli
