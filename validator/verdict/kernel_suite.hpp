// A suite against one kernel that lives elsewhere (`mqacheck run --kernel 'COMMAND'`): every case
// through one adapter process (validator/external), judged as a built-in variant is, into the
// same suite_report. The kernel is one variant, named by the adapter's label ("kernel" when it
// gives none), expected to pass every case; with `must_produce` it is a planted bug instead, and
// must be caught on at least one case.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/contract.hpp"
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

// The room run_kernel_suite asks of its scratch folder: the largest case's inputs and outputs,
// with a margin (external::scratch_folder falls back from /dev/shm to disk when it lacks it).
std::uintmax_t scratch_bytes_per_case(const cases::suite& s, int timing_launches, bool topk);

}  // namespace mqa::verdict
