// A suite against a kernel that runs in the caller's own process (the Python package's
// `python3 -m mqacheck run`, python/mqacheck/suite_run.py): the same run as `mqacheck run --kernel`
// (validator/verdict/kernel_suite.hpp), the same report, without the adapter's files and second
// process. The caller asks for each case, launches the kernel on its inputs (launch 1 and 2 into
// buffers it poisoned, then the timing launches) and hands the outputs over where they lie: on the
// host, or in a GPU's memory, where the device comparator judges them (api/device_judge.hpp) unless
// it sees something a finding is made of.
//
// What this way gives up, and the report says so in the kernel's notes: the kernel shares the
// judge's process, so it could read the reference in memory (a reference it changed is caught, as
// the adapter's session catches it: the case is an error), and an output is not checked for writes
// after the kernel returned. `mqacheck run --kernel` keeps the kernel in a process of its own,
// given the inputs only. bfloat16 logits and top-k indices are judged that way only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/kernel_options.hpp"
#include "api/output.hpp"
#include "validator/case/case.hpp"
#include "validator/verdict/kernel_suite.hpp"

namespace mqa::api {

struct suite_run_options {
  std::string cases_file;
  std::vector<std::string> case_names;  // only these cases of the suite (empty: every case)
  kernel_choices kernel;                // command: how the kernel is run, as the report names it
  std::optional<std::string> out;       // the reports' folder (none: none written; "" is refused)
  unsigned threads = 0;
  bool diagnose = true;
};

// One launch as the caller timed it.
struct launch_times {
  double kernel_seconds = 0;  // the kernel's call, the device synchronized before and after
  double turn_seconds = 0;    // the launch's whole turn: its buffer poisoned, the call, its output checked
  double poison_seconds = 0;  // the buffer poisoned (part of turn_seconds)
};

class suite_run {
 public:
  // input_error for a suite, case, contract or --out folder that cannot be used, before any case
  // runs; the folder is created only when finish() writes the reports (write_error() says why
  // that failed, should the folder change meanwhile).
  explicit suite_run(const suite_run_options& o);
  ~suite_run();
  suite_run(const suite_run&) = delete;
  suite_run& operator=(const suite_run&) = delete;

  // The next case the kernel is to run (its spec and inputs: never the reference), or null at the
  // end; the one before must have been recorded or skipped.
  const verdict::kernel_case* next();
  // The case's resolved case.toml (the text a bundle's case.toml holds).
  std::string case_toml() const;
  // The columns the kernel writes (n, or the longest window under relative columns) and the
  // padded row stride of the poisoned buffers it is given (never equal to the columns).
  std::int64_t output_width() const;
  std::int64_t output_stride() const;

  // The kernel does not take the case: skipped with the reason.
  void unsupported(const std::string& why);
  // The case's launches: `first` (launch 1's output; null where it failed) and `second` (launch 2's;
  // null where it failed or never ran), their times, the timing launches' times, and `error` (why the
  // case is not judged, or not completely: a launch that raised). Returns where launch 1 was judged:
  // "host", "device", "host: " and why a GPU's output went to the host, or "not judged".
  std::string record(const output_array* first, const output_array* second, const std::vector<launch_times>& launches,
                     const std::vector<launch_times>& timing, const std::string& error);

  // The report (the kernel named `label`, "kernel" where empty), written to the --out folder
  // where one was given (report.json, XML, Markdown, HTML: reports/formats.hpp).
  verdict::suite_report finish(const std::string& label);
  // "reports: DIR/report.json, ..." once finish() wrote them; empty otherwise.
  std::string written() const { return written_; }
  // Why finish() could not write them (the folder changed during the run); empty otherwise.
  std::string write_error() const { return write_error_; }

 private:
  cases::suite suite_;
  std::unique_ptr<verdict::kernel_suite_run> run_;
  std::optional<std::string> out_folder_;  // checked at the start, written by finish()
  std::string cases_file_;                 // the suite read: no report may replace it
  std::pair<std::string, std::string> digests_;  // of the case's reference and centre, before the launches
  bool diagnose_;
  unsigned threads_;
  std::string written_, write_error_;
};

// The suite in `file` with only the cases `names` names (all where empty), in the suite's order;
// input_error naming the file and its cases for a name it does not hold.
cases::suite selected_suite(const std::string& file, const std::vector<std::string>& names);

// The exit status of `mqacheck run` for a report: 0 every expectation holds, 1 findings or cases
// that could not be judged, 2 no case could be.
int run_exit_status(const verdict::suite_report& r);

}  // namespace mqa::api
