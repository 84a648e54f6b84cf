#include "session.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <system_error>

#include "kernel_output.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/bundle/digest.hpp"
#include "validator/compare/columns.hpp"
#include "validator/compare/topk_indices.hpp"
#include "validator/elapsed.hpp"
#include "kernels/external/adapter_process.hpp"
#include "kernels/external/protocol.hpp"
#include "kernels/external/stream_tail.hpp"
#include "kernels/external/strays.hpp"
#include "validator/judge/judge.hpp"
#include "validator/input_error.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::external {
namespace {

namespace fs = std::filesystem;

// The case's folders go when the case is done, however it ended.
class case_folders {
 public:
  case_folders(const scratch_folder& scratch, std::string_view stem)
      : scratch_(scratch), inputs(scratch.make_folder(std::string(stem) + ".inputs")),
        outputs(scratch.make_folder(std::string(stem) + ".outputs")) {}
  case_folders(const case_folders&) = delete;
  case_folders& operator=(const case_folders&) = delete;
  ~case_folders() {
    scratch_.remove(inputs);
    scratch_.remove(outputs);
  }

 private:
  const scratch_folder& scratch_;

 public:
  anchored_folder inputs, outputs;
};

std::string output_name(int launch) { return fmt::format("launch-{}.npy", launch); }

// Why launch `index`'s output no longer holds what was judged, or nullopt.
std::optional<std::string> output_changed(const anchored_folder& outputs, int index, const kernel_output& judged,
                                          kernels::logits_precision logits) {
  const auto why = changed_since_read(outputs.anchored(output_name(index)), judged, logits,
                                      outputs.path() / output_name(index));
  if (!why) return std::nullopt;
  return fmt::format("launch {}'s output changed after the adapter had answered ({}): a kernel still writing after it "
                     "reported done, or a process left behind writing it",
                     index, *why);
}

}  // namespace

struct session::launch_result {
  std::optional<kernel_output> output;
  std::optional<compare::read_indices> indices;  // an indexer's, launch 1
  std::optional<launch_record> record;
  std::optional<std::string> label;
  std::string error;            // empty: `output` holds the kernel's logits
  std::optional<std::string> unsupported;  // the adapter does not take the case, and why
  bool adapter_failed = false;  // it crashed, hung or broke the protocol (not "ok": false, not a bad file)
};

session::session(session_options o, const scratch_folder& scratch)
    : private_memory_(),
      options_(std::move(o)),
      scratch_(scratch),
      subreaper_(std::make_unique<child_subreaper>()),
      stderr_(std::make_shared<stream_tail>()) {}

session::~session() {
  try {
    finish();
  } catch (...) {
    // Nothing to report from a destructor; the process was reaped or killed by adapter_process.
  }
}

void session::finish() {
  if (process_) {
    const std::string how = process_->stop();
    if (!process_->exited_cleanly()) notes_.push_back(fmt::format("at the end of the suite the adapter's {}", how));
    retire();
  }
  // What an earlier adapter left that reached mqacheck only later (its own parent ended after it).
  for (const stray& s : end_strays(0))
    if (s.escaped) notes_.push_back(describe(s));
}

void session::retire() {
  if (!process_) return;
  process_->kill();
  for (auto& note : process_->take_notes()) notes_.push_back(std::move(note));
  process_.reset();
}

std::string session::with_stderr(std::string message, std::uint64_t mark) const {
  const std::string tail = stderr_->since(mark, 2000);
  if (tail.empty()) return message;
  message += "\nthe adapter's stderr ended with:";
  std::size_t start = 0;
  while (start <= tail.size()) {
    const std::size_t end = std::min(tail.find('\n', start), tail.size());
    message += "\n  | " + tail.substr(start, end - start);
    start = end + 1;
  }
  return message;
}

void session::start() {
  retire();
  process_options o;
  o.command = options_.command;
  o.stderr_tail = stderr_;
  o.interrupted = options_.interrupted;
  process_ = std::make_unique<adapter_process>(std::move(o));
  answers_from_process_ = 0;
  ++starts_;
}

session::launch_result session::launch(const anchored_folder& inputs, const anchored_folder& outputs, int index,
                                       std::int64_t m, std::int64_t n, const kernels::contract& contract) {
  return launch(inputs, outputs, index, output_name(index), false, false, m, n, contract);
}

session::launch_result session::launch(const anchored_folder& inputs, const anchored_folder& outputs, int index,
                                       const std::string& file, bool reuse, bool timing_only, std::int64_t m,
                                       std::int64_t n, const kernels::contract& contract) {
  launch_result r;
  const auto began = clock::now();
  const fs::path out = outputs.path() / file;
  try {
    if (!reuse) write_poisoned_output(outputs.anchored(file), m, runner::padded_stride(n), contract.logits, out);
  } catch (const input_error& e) {
    r.error = e.what();
    return r;
  }
  const double written_seconds = seconds_since(began);
  std::string line;
  // Case number and launch: unique within the run, and a reader of the adapter's log sees which
  // case a request was.
  const std::string request_id = fmt::format("{}.{}", cases_, index);
  try {
    request q{request_id, inputs.path().string(), out.string(), index, std::nullopt, std::nullopt, std::nullopt,
              std::nullopt};
    if (contract.logits == kernels::logits_precision::bf16) q.logits_dtype = "bfloat16";
    if (contract.columns == kernels::columns_layout::relative) q.max_seqlen_k = n;  // n: the relative width
    if (options_.topk) {
      q.topk_out = (outputs.path() / (fs::path(file).stem().string() + ".topk.npy")).string();
      q.topk = topk_k_;
    }
    line = encode(q);
  } catch (const protocol_error& e) {
    r.error = e.what();
    return r;
  }
  const auto timeout = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(options_.timeout_seconds));
  auto asked = clock::now();
  exchange_result x{exchange_status::gone, "", ""};
  try {
    if (!process_) start();
    x = process_->exchange(line, asked + timeout);
    // An adapter that answered before and then ended between requests (a crash in teardown, a
    // one-shot script) has not seen this request, or exited cleanly before answering it (the
    // request may have reached the pipe just as it exited): it is not this case's fault, and a
    // fresh adapter gets the request once more.
    const bool ended_cleanly = x.status == exchange_status::ended && process_->exited_cleanly();
    if ((x.status == exchange_status::gone || ended_cleanly) && answers_from_process_ > 0) {
      notes_.push_back(fmt::format("the adapter ended between requests, before answering the one for {} ({}); it was "
                                   "restarted and asked again",
                                   inputs.path().filename().string(), x.problem));
      start();
      asked = clock::now();
      x = process_->exchange(line, asked + timeout);
    }
  } catch (const std::system_error& e) {
    retire();
    r.error = fmt::format("cannot start the adapter: {}", e.what());
    r.adapter_failed = true;
    return r;
  }
  const double response_seconds = seconds_since(asked);
  switch (x.status) {
    case exchange_status::interrupted:
      retire();
      throw interrupted_error();
    case exchange_status::timed_out:
      retire();
      r.error = fmt::format("no answer within {} s (--timeout): the adapter's process group was killed ({})",
                            options_.timeout_seconds, x.problem);
      r.adapter_failed = true;
      return r;
    case exchange_status::gone:
    case exchange_status::ended:
    case exchange_status::violated:
      retire();
      r.error = x.problem;
      r.adapter_failed = true;
      return r;
    case exchange_status::answered:
      break;
  }
  ever_answered_ = true;
  ++answers_from_process_;
  response answer;
  try {
    answer = parse_response(x.line, request_id);
  } catch (const protocol_error& e) {
    // The stream may be out of step (a stray print before the real answer): start afresh.
    const std::string how = process_->kill();
    retire();
    r.error = fmt::format("{}; the adapter was stopped ({}) and is restarted for the next case", e.what(), how);
    r.adapter_failed = true;
    return r;
  }
  if (answer.unsupported) {
    r.unsupported = answer.unsupported;
    r.error = fmt::format("the adapter answered that the kernel does not take this case: {}", *answer.unsupported);
    return r;
  }
  if (!answer.ok) {
    r.error = fmt::format("the adapter reported an error: {}", answer.error);
    return r;
  }
  r.label = answer.label;
  const auto reading = clock::now();
  if (!timing_only) {
    try {
      r.output = read_kernel_output(outputs.anchored(file), m, n, contract.logits, out);
      if (options_.topk && index == 1) {
        const std::string indices_file = fs::path(file).stem().string() + ".topk.npy";
        r.indices = read_kernel_indices(outputs.anchored(indices_file), m, topk_k_, outputs.path() / indices_file);
        if (r.indices->k != topk_k_)
          throw input_error(fmt::format("its top-k indices hold k = {} per row where k = {} was asked", r.indices->k,
                                        topk_k_));
      }
    } catch (const input_error& e) {
      r.error = fmt::format("the adapter answered ok, but {}", e.what());
      return r;
    }
  }
  r.record = launch_record{.kernel_seconds = answer.seconds,
                           .response_seconds = response_seconds,
                           .exchange_seconds = seconds_since(began),
                           .output_written_seconds = written_seconds,
                           .output_read_seconds = seconds_since(reading)};
  return r;
}

case_outcome session::run_case(const case_inputs& in, const exact::problem& p, const paged::problem* paged,
                               const exact::result& reference, const exact::result* centre,
                               const kernels::contract& contract, bool keep_output) {
  case_outcome outcome;
  ++cases_;
  if (!ever_answered_ && silent_failures_ >= kGiveUpAfter) {
    outcome.error = fmt::format("not attempted: the adapter failed on the first {} cases without ever answering "
                                "(the first case's error says why)",
                                silent_failures_);
    return outcome;
  }
  const std::uint64_t stderr_mark = stderr_->mark();
  std::optional<case_folders> folders;
  const auto writing = clock::now();
  try {
    folders.emplace(scratch_, fmt::format("{:03}-{}", cases_, in.spec.name));
    bundle::write_kernel_inputs(in.spec, in.suite_name, in.tensors, folders->inputs.anchor(), folders->inputs.path());
  } catch (const input_error& e) {
    outcome.error = fmt::format("cannot write the case's inputs for the adapter: {}", e.what());
    return outcome;
  }
  outcome.inputs_written_seconds = seconds_since(writing);
  const std::string reference_digest = bundle::digest_of(reference);
  const std::string centre_digest = centre ? bundle::digest_of(*centre) : "";

  auto note_label = [&](const std::optional<std::string>& label) {
    if (!label) return;
    if (!label_) label_ = label;
    else if (*label_ != *label)
      notes_.push_back(fmt::format("the adapter's label changed from '{}' to '{}' on case '{}'", *label_, *label, in.spec.name));
    outcome.label = label;
  };

  // Relative columns: the adapter fills [m, S >= relative_width]; judged on its absolute image.
  const bool relative = contract.columns == kernels::columns_layout::relative;
  const std::int64_t width = relative ? compare::relative_width(p) : p.n;
  std::vector<float> first_absolute, second_absolute;
  auto judged_view = [&](kernel_output& written, std::vector<float>& image) -> kernels::output_view {
    if (!relative) return written.view();
    image = compare::absolute_from_relative(written.view(), p, -INFINITY);
    return {image.data(), p.m, p.n, p.n};
  };
  // An indexer's k: the case's (resolved for the kernel), else DeepSeek-V3.2's 2048, as the runner's.
  topk_k_ = in.spec.topk.value_or(2048);
  launch_result first = launch(folders->inputs, folders->outputs, 1, p.m, width, contract);
  note_label(first.label);
  if (first.unsupported) {
    outcome.unsupported = std::move(first.unsupported);
    return outcome;
  }
  if (!first.output) {
    if (first.adapter_failed && !ever_answered_) ++silent_failures_;
    outcome.error = with_stderr("launch 1: " + first.error, stderr_mark);
    return outcome;
  }
  outcome.launches.push_back(*first.record);
  compare::subject subject =
      compare::subject_of(p, paged, contract, in.spec.topk, judged_view(*first.output, first_absolute), options_.threads);
  subject.reference = &reference;
  subject.centre = centre;
  if (first.indices) {
    subject.indices = kernels::indices_view{first.indices->values.data(), p.m, first.indices->k};
    subject.topk_convention = *options_.topk;
  }
  const auto comparing = clock::now();
  compare::judgement j = compare::judge(subject);
  outcome.judging.compare = seconds_since(comparing);
  if (options_.interrupted && options_.interrupted()) throw interrupted_error();

  launch_result second = launch(folders->inputs, folders->outputs, 2, p.m, width, contract);
  note_label(second.label);
  // Whether a kernel takes a case is decided before it runs: one that ran launch 1 and calls the
  // same case unsupported on launch 2 says something false about one of them.
  if (second.unsupported)
    second.error = fmt::format("the adapter ran launch 1 of this case, then answered that the kernel does not take it "
                               "({}): a kernel takes a case on every launch or on none",
                               *second.unsupported);
  if (!second.output) {
    outcome.error = with_stderr("launch 2: " + second.error, stderr_mark);
  } else {
    outcome.launches.push_back(*second.record);
    subject.repeat = judged_view(*second.output, second_absolute);
    // The kernel's time on more launches than the two judged (their best and median, in the
    // report): one buffer, poisoned once, never read back; each launch must still be answered ok.
    for (int t = 0; t < options_.timing_launches; ++t) {
      if (options_.interrupted && options_.interrupted()) throw interrupted_error();
      const int index = 3 + t;
      launch_result timed = launch(folders->inputs, folders->outputs, index, "timing.npy", t > 0, true, p.m, width, contract);
      note_label(timed.label);
      if (timed.unsupported)
        timed.error = fmt::format("the adapter ran launches 1 and 2 of this case, then answered that the kernel does not "
                                  "take it ({}): a kernel takes a case on every launch or on none",
                                  *timed.unsupported);
      if (!timed.record || !timed.error.empty()) {
        outcome.error = with_stderr(fmt::format("timing launch {} (not judged, but it must succeed): {}", index, timed.error),
                                    stderr_mark);
        break;
      }
      outcome.timing.push_back(*timed.record);
    }
  }
  // The runner's rule: a kernel that declares determinism must give the same bits twice.
  judge::finish(subject, j, {.diagnose = options_.diagnose, .launch_findings = {}}, &outcome.judging);

  // What was judged must still be what the adapter left when it answered, and the references
  // what mqacheck computed: otherwise the judgement stands on nothing and the case is an error.
  std::string void_because;
  for (const auto& [index, output] : {std::pair{1, &first.output}, std::pair{2, &second.output}})
    if (const auto why = *output ? output_changed(folders->outputs, index, **output, contract.logits) : std::nullopt)
      void_because += (void_because.empty() ? "" : "; ") + *why;
  if (bundle::digest_of(reference) != reference_digest || (centre && bundle::digest_of(*centre) != centre_digest))
    void_because += std::string(void_because.empty() ? "" : "; ") + "mqacheck's reference changed in its memory during the launches";
  if (!void_because.empty()) {
    outcome.error = outcome.error.empty() ? void_because : outcome.error + "; " + void_because;
    return outcome;
  }
  outcome.judgement = std::move(j);
  if (keep_output) {
    outcome.output = std::move(first.output);
    outcome.repeat = std::move(second.output);
  }
  return outcome;
}

}  // namespace mqa::external
