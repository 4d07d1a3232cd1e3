#include "cli/options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "tapegrad/core/error.hpp"

namespace tg::cli {

namespace {

// A whole decimal integer from lo to hi.
CLI::Validator integer(std::int64_t lo, std::int64_t hi) {
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

std::string number_str(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

// A finite number from lo to hi.
CLI::Validator number(double lo, double hi) {
    return CLI::Validator(
        [lo, hi](std::string& v) -> std::string {
            char* end = nullptr;
            const double x = std::strtod(v.c_str(), &end);
            if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x)) return "'" + v + "' is not a number";
            if (x < lo || x > hi) return "'" + v + "' must be from " + number_str(lo) + " to " + number_str(hi);
            return {};
        },
        number_str(lo) + ".." + number_str(hi));
}

// One of `names`, spelled exactly.
CLI::Validator one_of(const std::vector<std::string>& names) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : "|") + n;
    return CLI::Validator(
        [names, list](std::string& v) -> std::string {
            if (std::find(names.begin(), names.end(), v) != names.end()) return {};
            return "'" + v + "' is not one of " + list;
        },
        list);
}

const CLI::Validator& non_empty() {
    static const CLI::Validator v(
        [](std::string& s) -> std::string { return s.empty() ? "needs a non-empty value" : std::string(); }, "");
    return v;
}

std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* o : app.get_options())
        if (!o->get_lnames().empty()) names.push_back("--" + o->get_lnames().front());
    return names;
}

// Refuses what CLI11 left over in `app` (allow_extras): an unknown command, option or word.
void refuse_extras(CLI::App& app, const std::string& program) {
    const std::vector<std::string> extra = app.remaining();
    if (extra.empty()) return;
    const std::string& w = extra.front();
    const std::string word = w.substr(0, w.find('='));
    const bool dash = word.size() > 1 && word[0] == '-';
    const std::vector<CLI::App*> commands = app.get_subcommands({});
    if (!commands.empty() && app.get_subcommands().empty() && !dash) {
        std::vector<std::string> names;
        std::string list;
        for (const CLI::App* c : commands) list += (list.empty() ? "" : ", ") + c->get_name(), names.push_back(c->get_name());
        const std::string near = nearest(word, names);
        fail("command", "unknown command '", word, "'", near.empty() ? "" : " (did you mean " + near + "?)",
             "; the commands are ", list);
    }
    if (dash) {
        const std::string near = nearest(word, option_names(app));
        fail(word, "unknown option '", word, "'", near.empty() ? "" : " (did you mean " + near + "?)", "; ", program,
             " --help lists the options");
    }
    fail(w, "unexpected argument '", w, "'; ", program, " --help lists the arguments");
}

template <class T>
CLI::Option* add_integer(CLI::App* app, const std::string& name, T& value, const std::string& help, std::int64_t lo,
                         std::int64_t hi) {
    return app->add_option(name, value, help)->check(integer(lo, hi))->default_str(std::to_string(value));
}

}  // namespace

Command& Command::option(const std::string& name, int& value, const std::string& help, std::int64_t lo, std::int64_t hi) {
    last_ = add_integer(app_, name, value, help, lo, hi);
    return *this;
}
Command& Command::option(const std::string& name, std::int64_t& value, const std::string& help, std::int64_t lo,
                         std::int64_t hi) {
    last_ = add_integer(app_, name, value, help, lo, hi);
    return *this;
}
Command& Command::option(const std::string& name, std::uint64_t& value, const std::string& help, std::int64_t lo,
                         std::int64_t hi) {
    last_ = add_integer(app_, name, value, help, lo, hi);
    return *this;
}
Command& Command::option(const std::string& name, double& value, const std::string& help, double lo, double hi) {
    last_ = app_->add_option(name, value, help)->check(number(lo, hi))->default_str(number_str(value));
    return *this;
}
Command& Command::option(const std::string& name, std::string& value, const std::string& help,
                         const std::vector<std::string>& choices) {
    last_ = app_->add_option(name, value, help)->check(choices.empty() ? non_empty() : one_of(choices))->default_str(value);
    return *this;
}
Command& Command::option(const std::string& name, std::vector<std::string>& values, const std::string& help,
                         const std::vector<std::string>& choices) {
    last_ = app_->add_option(name, values, help)->check(one_of(choices));
    return *this;
}
Command& Command::flag(const std::string& name, bool& value, const std::string& help) {
    last_ = app_->add_flag(name, value, help);
    return *this;
}
Command& Command::positional(const std::string& name, std::string& value, const std::string& help) {
    last_ = app_->add_option(name, value, help)->required()->check(non_empty());
    return *this;
}
Command& Command::type(const std::string& name) {
    if (last_) last_->type_name(name);
    return *this;
}
Command& Command::required() {
    if (last_) last_->required();
    return *this;
}
Command& Command::no_default() {
    if (last_) last_->default_str("");
    return *this;
}
Command& Command::footer(const std::string& text) {
    app_->footer(text);
    return *this;
}
bool Command::chosen() const { return app_->parsed(); }

Parser::Parser(const std::string& program, const std::string& summary)
    : Command(nullptr), owned_(std::make_unique<CLI::App>(summary, program)) {
    app_ = owned_.get();
}

Parser::~Parser() = default;

Command& Parser::command(const std::string& name, const std::string& summary) {
    commands_.push_back(std::unique_ptr<Command>(new Command(app_->add_subcommand(name, summary))));
    return *commands_.back();
}

bool Parser::parse(int argc, const char* const* argv) {
    CLI::App& app = *app_;
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
        fail("option", e.what(), "; ", program, chosen.empty() ? "" : " " + chosen.front()->get_name(),
             " --help lists the options");
    }
    for (CLI::App* sub : app.get_subcommands()) refuse_extras(*sub, program + " " + sub->get_name());
    refuse_extras(app, program);
    return true;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
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

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_d = SIZE_MAX;
    for (const std::string& c : candidates) {
        const std::size_t d = word.size() > 3 && c.rfind(word, 0) == 0 ? 0 : edit_distance(word, c);
        if (d < best_d) best = c, best_d = d;
    }
    return best_d <= std::max<std::size_t>(2, word.size() / 3) ? best : std::string();
}

}  // namespace tg::cli
