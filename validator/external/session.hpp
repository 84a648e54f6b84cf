// One kernel that lives elsewhere, judged case by case through its adapter (`mqacheck run
// --kernel`, docs/protocol.md): the runner of kernels/external processes, as validator/runner is
// for the variants built in.
//
// Per case: the kernel's inputs (case.toml and the input arrays, never the reference:
// bundle::write_kernel_inputs) are written to a fresh folder of the scratch folder, the output
// file, poisoned (float32 [m, padded stride]), to another; launch 1 is requested and its output
// judged by the comparator under the declared contract; then launch 2 into a freshly poisoned
// file, compared bit for bit with launch 1 (`nondeterministic`). Both outputs are read again at
// the end and must not have changed since they were read; the reference, which lives only in
// mqacheck's memory, is digested before the first launch and after the last and must not have
// changed either. Whatever the adapter does wrong (crash, hang past the
// timeout, an answer that breaks the protocol, "ok": false, an output of the wrong dtype or
// shape) is that case's error, never mqacheck's end: the adapter is restarted for the next case
// where it died or its stream went out of step.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/contract.hpp"
#include "reference/exact/logits.hpp"
#include "validator/case/case.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/external/kernel_output.hpp"
#include "validator/external/private_memory.hpp"
#include "validator/external/scratch.hpp"
#include "validator/judge/judge.hpp"

namespace mqa::external {

class adapter_process;
class child_subreaper;
class stream_tail;

struct session_options {
  std::string command;           // run by /bin/sh -c, once for the suite (again after a failure)
  double timeout_seconds = 300;  // per request, the adapter's start-up included for the first
  std::function<bool()> interrupted;
  unsigned threads = 0;  // the comparator's
  bool diagnose = true;  // findings get the cause validator/diagnose reproduces
  // Launches after the two judged ones, for the kernel's time only: one output buffer, poisoned
  // once and reused, never judged; each must be answered "ok" (docs/protocol.md, "Timing").
  int timing_launches = 0;
  // An indexer: each request also asks for the top-k indices (docs/protocol.md), judged under this
  // convention beside launch 1's logits (validator/compare/topk_indices.hpp). Unset: logits only.
  std::optional<kernels::topk_convention> topk;
};

// The user asked mqacheck to stop (SIGINT, SIGTERM): the adapter is stopped and the scratch
// folder removed on the way out.
class interrupted_error : public std::runtime_error {
 public:
  interrupted_error() : std::runtime_error("interrupted") {}
};

struct launch_record {
  std::optional<double> kernel_seconds;  // the adapter's "seconds"
  double response_seconds = 0;           // request sent to response read: the adapter's whole turn
  double exchange_seconds = 0;           // poisoned output written, request, response, output read back
  double output_written_seconds = 0;     // the poisoned output file written (part of exchange_seconds)
  double output_read_seconds = 0;        // the adapter's output read back (part of exchange_seconds)
};

// What the kernel gets of a case: the case (topk resolved) and its inputs.
struct case_inputs {
  std::string_view suite_name;
  const cases::case_spec& spec;
  const inputs::tensors& tensors;
};

struct case_outcome {
  std::optional<compare::judgement> judgement;  // launch 1 judged (with launch 2's determinism finding)
  std::string error;                            // why the case is not judged, or not completely
  // The adapter answered launch 1 "unsupported" (docs/protocol.md): the case is not the kernel's,
  // skipped with this reason (one line, bounded: kernels/external/text.hpp), neither judged nor an error.
  std::optional<std::string> unsupported;
  std::vector<launch_record> launches;          // the launches the adapter answered "ok" to
  std::vector<launch_record> timing;            // the timing launches after them (session_options::timing_launches)
  std::optional<double> inputs_written_seconds;  // the case's inputs written to the scratch folder (unset: never)
  judge::seconds judging;                       // mqacheck's side: comparator, determinism, suspicion, diagnosis
  std::optional<std::string> label;
  // The launches' outputs, when run_case was asked to keep them (`mqacheck shrink` writes them).
  std::optional<kernel_output> output, repeat;
};

class session {
 public:
  // A failure of the adapter before it ever answered, this many cases in a row, ends the suite:
  // the remaining cases are reported as not attempted rather than each waiting for its timeout.
  static constexpr int kGiveUpAfter = 3;

  // mqacheck is a child subreaper while the session lives (kernels/external/strays.hpp): what
  // an adapter leaves running outside its process group is found, killed and noted.
  session(session_options o, const scratch_folder& scratch);
  ~session();  // closes the adapter's stdin and waits for it to exit (then kills its group)
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // `reference` follows the contract's relu rule; `centre`, for a modelled contract, is
  // judge::centre_for's (else nullptr). For a paged case `p` is its rows and `paged` its operation
  // (compare::subject); else null.
  case_outcome run_case(const case_inputs& in, const exact::problem& p, const paged::problem* paged,
                        const exact::result& reference, const exact::result* centre,
                        const kernels::contract& contract, bool keep_output = false);

  int starts() const { return starts_; }
  // Label changes, restarts, the adapter's end, processes it left running.
  std::vector<std::string> notes() const { return notes_; }

  // Stops the adapter (closing its stdin), notes how it ended, and ends whatever it left behind.
  void finish();

 private:
  struct launch_result;
  // Launch `index` into the output file `file` of `outputs`: poisoned first unless `reuse` (a
  // timing launch after the first), read back unless `timing_only`.
  launch_result launch(const anchored_folder& inputs, const anchored_folder& outputs, int index,
                       std::int64_t m, std::int64_t n, const kernels::contract& contract);
  launch_result launch(const anchored_folder& inputs, const anchored_folder& outputs, int index, const std::string& file,
                       bool reuse, bool timing_only, std::int64_t m, std::int64_t n, const kernels::contract& contract);
  void start();  // throws std::system_error
  // Drops the adapter process (killing it if it still runs), keeping its notes.
  void retire();
  // `message`, and the adapter's stderr since `mark` (stream_tail::mark) where it wrote any.
  std::string with_stderr(std::string message, std::uint64_t mark) const;

  private_memory private_memory_;  // before any adapter starts
  session_options options_;
  const scratch_folder& scratch_;
  std::unique_ptr<child_subreaper> subreaper_;
  std::shared_ptr<stream_tail> stderr_;  // every adapter process's in turn: a failure's explanation outlives it
  std::unique_ptr<adapter_process> process_;
  int answers_from_process_ = 0;  // lines the running process answered
  int starts_ = 0, cases_ = 0;
  std::int64_t topk_k_ = 0;  // the case under way's k, where options_.topk is set
  bool ever_answered_ = false;
  int silent_failures_ = 0;  // consecutive cases failed by an adapter that never answered
  std::optional<std::string> label_;
  std::vector<std::string> notes_;
};

}  // namespace mqa::external
