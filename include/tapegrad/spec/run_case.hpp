// What `tapegrad run CASE.json` does (docs/cases.md), as a library call: the command line
// is this plus printing an exception as one `error:` line, and tests can run case files
// in-process.
#pragma once
#include <exception>
#include <string>

namespace tg {

// The most multiply-adds one command may run (--work-limit): about a minute on one core.
// Cases past it (a 1-D convolution of two 2 MB signals with pads of 2^19 is 8e11) are
// refused at once instead of running for minutes.
inline constexpr double kDefaultWorkLimit = 2e11;
// The largest result a command makes (run's output, gradcheck's f64 result per run): 4 GiB.
inline constexpr std::int64_t kMaxResultBytes = std::int64_t{4} << 30;

// Reads the case file, runs its op (and with grad_output its gradients through the tape),
// and writes every output, all or nothing: each file is written beside its target first and
// renamed into place only when all are written. Refuses, before allocating, a result over
// 4 GiB and a case over `work_limit` multiply-adds. Throws tg::Error naming the offending key.
void run_case(const std::string& path, double work_limit = kDefaultWorkLimit);

// The one line the command line prints for a failure: "error: " and the message with its
// line breaks turned into spaces (no newline at the end).
std::string error_line(const std::exception& e);

}  // namespace tg
