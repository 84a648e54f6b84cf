// A suite against one kernel that lives elsewhere (`mqacheck run --kernel 'COMMAND'`): every case
// through one adapter process (validator/external), judged as a built-in variant is, into the
// same suite_report. The kernel is one variant, named by the adapter's label ("kernel" when it
// gives none), expected to pass every case; with `must_produce` it is a planted bug instead, and
// must be caught on at least one case.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/contract.hpp"
#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"
#include "validator/external/session.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/references.hpp"
#include "validator/verdict/verdict.hpp"

namespace mqa::verdict {

struct kernel_options {
  std::string command;
  double timeout_seconds = 300;
  kernels::contract contract;            // as declared on the command line
  std::optional<kernels::masking> mask;  // declared; unset: each case's clean_logits decides
  std::vector<std::string> must_produce; // finding classes (compare::to_string) that catch a planted bug
  // The operations the kernel computes: cases of another one are skipped, with the reason.
  bool prefill = true, paged = false;
  // Launches after the two judged, timed and not judged (each must still succeed): the kernel's
  // time is the best of launch 2 and these, reported with their median (`--timing-launches`).
  int timing_launches = 3;
  // An indexer: the adapter returns top-k indices beside the logits, judged under this convention
  // (`--topk-indices`). Unset: logits only.
  std::optional<kernels::topk_convention> topk;
  // Polled while waiting and between stages; true ends the run with external::interrupted_error
  // after the adapter is stopped and the scratch folder removed.
  std::function<bool()> interrupted;
};

suite_report run_kernel_suite(const cases::suite& s, const kernel_options& k, const run_options& o);

// One case the kernel is to run, generated and with its references computed (they stay with the
// judge: the kernel gets `spec` and `tensors` only).
struct kernel_case {
  std::size_t index = 0;                 // in the suite
  cases::case_spec spec;                 // topk resolved (layout::default_topk where the case leaves it)
  inputs::tensors tensors;
  exact::problem problem;                // points into `tensors`; a paged case's rows
  std::optional<paged::problem> paged;
  kernels::contract contract;            // the declared one, masking from the case where --mask is not given
  std::unique_ptr<judge::reference_cache> references;
  const exact::result* reference = nullptr;  // under the contract's relu rule
  const exact::result* centre = nullptr;     // a modelled contract's, else null
  case_timing timing;
  std::chrono::steady_clock::time_point started;

  kernel_case() = default;
  kernel_case(const kernel_case&) = delete;  // the problem and the references point into it
  kernel_case& operator=(const kernel_case&) = delete;
  const paged::problem* paged_or_null() const { return paged ? &*paged : nullptr; }
};

// run_kernel_suite a step at a time, for a caller that launches the kernel itself (the Python
// extension's in-process runner, api/suite_run.hpp): next() gives each case the kernel is to run
// (recording those skipped: another operation, a modelled contract's instruction that cannot take
// the case, another shard's), and each is then recorded, skipped as the kernel's own limit, or
// judged. finish() is the report, the same document whichever way the kernel was run.
class kernel_suite_run {
 public:
  kernel_suite_run(const cases::suite& s, kernel_options k, run_options o);
  kernel_suite_run(const kernel_suite_run&) = delete;
  kernel_suite_run& operator=(const kernel_suite_run&) = delete;

  // The next case to run, or null at the end of the suite; the one before it must have been
  // recorded or skipped. Valid until the next call.
  kernel_case* next();
  // The kernel does not take the case (docs/protocol.md "unsupported"): skipped, with the reason.
  void unsupported(const std::string& why);
  // The case's outcome: judged, or an error (external::case_outcome's fields).
  void record(external::case_outcome out);
  // The report: `label` names the kernel (empty: "kernel"), `starts` its adapter's starts (0 in
  // process), `notes` what its runner noticed.
  suite_report finish(const std::optional<std::string>& label, int starts, std::vector<std::string> notes);

  // The case next() gave, until it is recorded or skipped; else null.
  const kernel_case* current() const { return current_ ? &*current_ : nullptr; }
  const kernel_options& options() const { return k_; }
  const run_options& run() const { return o_; }

 private:
  const cases::suite& s_;
  kernel_options k_;
  run_options o_;
  suite_report report_;
  std::chrono::steady_clock::time_point start_;
  std::size_t at_ = 0;    // the next case's index
  std::size_t done_ = 0;  // cases this run has finished with (progress)
  std::optional<kernel_case> current_;
};

// The room run_kernel_suite asks of its scratch folder: the largest case's inputs and outputs,
// with a margin (external::scratch_folder falls back from /dev/shm to disk when it lacks it).
std::uintmax_t scratch_bytes_per_case(const cases::suite& s, int timing_launches, bool topk);

}  // namespace mqa::verdict
