// What the command line of every tapegrad program shares (the `tapegrad` tool, the examples,
// the lessons, the benchmarks): CLI11 in one style, behind a small interface so CLI11's
// header is compiled once (cli/options.cpp), not in every program (4-5 s each).
//
// `--opt value` and `--opt=value` both work; `-h`/`--help` prints CLI11's help (with each
// option's range and default) and parse() returns false (the program exits 0); every mistake
// throws one tg::Error naming the option, which main prints as one `error:` line (exit 1): a
// value out of range or not a number, a missing value, and an unknown option or command,
// with the nearest valid name suggested.
//
//     cli::Parser p("fashion_classifier", "Trains a small classifier.");
//     p.option("--epochs", epochs, "passes over the data", 1, 100000);
//     p.option("--out", out, "where files go").type("DIR");
//     if (!p.parse(argc, argv)) return 0;
//
// Not part of the installed library.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace tg::cli {

// A set of options: the program's own, or one command's (Parser::command). The option
// methods bind a variable whose current value is the default (shown in --help) and return
// *this, so the calls chain; type(), required() and no_default() change the option added last.
class Command {
public:
    // Whole numbers from lo to hi.
    Command& option(const std::string& name, int& value, const std::string& help, std::int64_t lo, std::int64_t hi);
    Command& option(const std::string& name, std::int64_t& value, const std::string& help, std::int64_t lo, std::int64_t hi);
    Command& option(const std::string& name, std::uint64_t& value, const std::string& help, std::int64_t lo, std::int64_t hi);
    // A finite number from lo to hi.
    Command& option(const std::string& name, double& value, const std::string& help, double lo, double hi);
    // A non-empty string; with `choices`, one of them exactly.
    Command& option(const std::string& name, std::string& value, const std::string& help,
                    const std::vector<std::string>& choices = {});
    // Repeatable (--op a --op b), each one of `choices`.
    Command& option(const std::string& name, std::vector<std::string>& values, const std::string& help,
                    const std::vector<std::string>& choices);
    Command& flag(const std::string& name, bool& value, const std::string& help);
    // A required word without a dash (e.g. CASE.json).
    Command& positional(const std::string& name, std::string& value, const std::string& help);

    Command& type(const std::string& name);  // the value's name in --help (DIR, FILE, N, ...)
    Command& required();                     // the option must be given
    Command& no_default();                   // --help shows no default (e.g. 0 meaning "automatic")
    Command& footer(const std::string& text);  // a paragraph after the options in --help

    // Whether this command was the one given on the command line (Parser::command).
    bool chosen() const;

protected:
    explicit Command(CLI::App* app) : app_(app) {}
    CLI::App* app_;
    CLI::Option* last_ = nullptr;
    friend class Parser;
};

// The whole command line: the program's options and, optionally, commands.
class Parser : public Command {
public:
    Parser(const std::string& program, const std::string& summary);
    ~Parser();
    Parser(const Parser&) = delete;
    Parser& operator=(const Parser&) = delete;

    // A command (`tapegrad run ...`) with its own options.
    Command& command(const std::string& name, const std::string& summary);
    // Parses argv. Returns false when it printed the help (the program then exits 0);
    // throws tg::Error for every mistake.
    bool parse(int argc, const char* const* argv);

private:
    std::unique_ptr<CLI::App> owned_;
    std::vector<std::unique_ptr<Command>> commands_;
};

// The edit distance between a and b (insertions, deletions, substitutions).
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `word` when it is close enough to be a typo (an edit distance of
// at most 2, or a third of its letters; or the start of the candidate), else "".
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace tg::cli
