// What `mqacheck run` and `mqacheck certify` share: the flags that choose what runs, the run
// itself, its table on stdout and its report files. `certify` takes exactly run's options, so a
// way of running (a kernel behind an adapter, `run --kernel`) added here serves both.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reports/formats.hpp"
#include "reports/report.hpp"
#include "run_kernel.hpp"
#include "validator/case/case.hpp"
#include "validator/io/output_set.hpp"
#include "validator/verdict/shard.hpp"
#include "validator/verdict/verdict.hpp"

namespace mqa::cli {

struct run_flags {
  std::string cases_file;
  std::vector<std::string> case_names;  // --case: only these cases of the suite (default: all)
  std::vector<std::string> variants;
  unsigned threads = 0;
  bool diagnose = true;  // --no-diagnosis turns it off
  bool diagnose_mutants = false;  // --diagnose-mutants: the built-in mutants' findings too
  kernel_flags kernel;  // --kernel: a kernel behind an adapter instead of built-in variants
};

// --cases (required), --case, --variant, --threads, --no-diagnosis, --diagnose-mutants, and --kernel with its contract
// flags.
void add_run_flags(CLI::App& cmd, run_flags& f);

// The suite of --cases with only the cases --case names, in the suite's order; input_error naming
// the suite file and its cases for a name it does not hold.
cases::suite load_selected_suite(const run_flags& f);

// The run's arguments checked against the suite before any work: input_error for an unknown
// variant or a bad contract flag.
void check_run_flags(const cases::suite& s, const run_flags& f);

// Every case of `s` against the selected variants; only `shard`'s pairs when one is given.
verdict::suite_report run_selected(const cases::suite& s, const run_flags& f, std::optional<verdict::shard> shard = {});

// What the terminal shows past the result table (`run`'s --verbose and --timing).
struct terminal_flags {
  bool verbose = false;  // every skipped pair with its reason, not only their count
  bool brief = false;    // the table's rows only where an expectation broke (a CI log; the reports hold all)
  bool timing = false;   // per case: inputs, reference, total, and the stages of its variants (or kernel)
};

// The result table, the skipped pairs (counted, or listed), the timings when asked, the kernel's
// adapter (run --kernel) and the expectations on stdout (cli/run_output.cpp).
void print_results(const verdict::suite_report& r, const terminal_flags& shown = {});

using reports::write_files;

}  // namespace mqa::cli
