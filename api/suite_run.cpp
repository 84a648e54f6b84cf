#include "suite_run.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <stdexcept>
#include <string_view>

#include "api/reference_engine.hpp"
#include "reports/formats.hpp"
#include "reports/report.hpp"
#include "validator/bundle/digest.hpp"
#include "validator/case/load.hpp"
#include "validator/case/resolved.hpp"
#include "validator/compare/columns.hpp"
#include "validator/input_error.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/io/output_set.hpp"
#include "validator/judge/judge.hpp"
#include "validator/runner/runner.hpp"

#ifdef MQA_HAVE_GPU
#include "api/device_judge.hpp"
#endif

namespace mqa::api {
namespace {

using clock = std::chrono::steady_clock;

external::launch_record record_of(const launch_times& t) {
  // In process nothing is written or read back: the exchange is the launch's whole turn.
  return {.kernel_seconds = t.kernel_seconds,
          .response_seconds = t.kernel_seconds,
          .exchange_seconds = t.turn_seconds,
          .output_written_seconds = t.poison_seconds,
          .output_read_seconds = 0};
}

// Launch 1 judged against the case's references (launch 2, where given, for determinism) on the
// host, as the adapter's session judges it; an output that is not what the contract declares is
// the case's error, as an adapter's file of the wrong shape is (launch 1 still judged where only
// launch 2's is wrong).
void judged_on_host(const verdict::kernel_case& c, const output_array& first, const output_array* second, bool diagnose,
                    unsigned threads, external::case_outcome& out) {
  const auto add_error = [&](const std::string& e) { out.error = out.error.empty() ? e : out.error + "; " + e; };
  judged_output logits, repeat;
  try {
    logits = judged_from_memory(first, "launch 1's output", c.problem, c.contract);
  } catch (const input_error& e) {
    add_error(e.what());
    return;
  }
  bool repeated = second != nullptr;
  if (second) {
    try {
      repeat = judged_from_memory(*second, "launch 2's output", c.problem, c.contract);
    } catch (const input_error& e) {
      add_error(e.what());
      repeated = false;
    }
  }
  compare::subject s = compare::subject_of(c.problem, c.paged_or_null(), c.contract, c.spec.topk, logits.view(), threads);
  s.reference = c.reference;
  s.centre = c.centre;
  const auto comparing = clock::now();
  compare::judgement j = compare::judge(s);
  out.judging.compare = judge::seconds_since(comparing);
  if (repeated) s.repeat = repeat.view();
  judge::finish(s, j, {.diagnose = diagnose, .launch_findings = {}}, &out.judging);
  out.judgement = std::move(j);
}

#ifdef MQA_HAVE_GPU
// On the device where it sees nothing a finding is made of; "" where it judged, else why not.
std::string judged_on_device(const verdict::kernel_case& c, const output_array& first, const output_array* second,
                             unsigned threads, external::case_outcome& out) {
  if (c.paged) return "a paged case";
  if (const auto why = device_path::unsuited(c.problem, c.contract, first, second)) return *why;
  compare::subject s = compare::subject_of(c.problem, nullptr, c.contract, c.spec.topk,
                                           {nullptr, c.problem.m, c.problem.n, first.row_stride}, threads);
  s.reference = c.reference;
  s.centre = c.centre;
  const device_path::current_device_kept caller;
  const auto comparing = clock::now();
  device_path::verdict v;
  try {
    // The case's references are uploaded once, for this judgement: the next case has others.
    v = device_path::judge(s, first, second, [](const compare::subject& subject, int device) {
      return std::make_shared<const compare::device::references>(subject, device,
                                                                 device_path::witnessed_on_device(subject));
    });
  } catch (const std::exception& e) {  // the device refused (out of memory), or the host's copy: the host judges
    return fmt::format("the device failed: {}", e.what());
  }
  if (!v.judged) return v.why;
  out.judging.compare = judge::seconds_since(comparing);
  out.judgement = std::move(*v.judged);
  return "";
}
#endif

}  // namespace

cases::suite selected_suite(const std::string& file, const std::vector<std::string>& names) {
  cases::suite s = cases::load_suite(file);
  if (names.empty()) return s;
  for (const auto& name : names) {
    if (std::none_of(s.cases.begin(), s.cases.end(), [&](const cases::case_spec& c) { return c.name == name; })) {
      std::string listed;
      for (const auto& c : s.cases) listed += (listed.empty() ? "" : ", ") + c.name;
      throw input_error(fmt::format("--case {}: {} has no case of that name (its cases: {})", name, file, listed));
    }
  }
  std::erase_if(s.cases, [&](const cases::case_spec& c) {
    return std::find(names.begin(), names.end(), c.name) == names.end();
  });
  return s;
}

suite_run::suite_run(const suite_run_options& o)
    : suite_(selected_suite(o.cases_file, o.case_names)), cases_file_(o.cases_file), diagnose_(o.diagnose),
      threads_(o.threads) {
  verdict::kernel_options k = kernel_options_of(o.kernel);
  if (k.topk)
    throw input_error("--topk-indices: an indexer's top-k indices are judged through `mqacheck run --kernel` (its "
                      "adapter serves them); in process, the logits alone");
  if (k.contract.logits == bounds::logits_precision::bf16)
    throw input_error("--logits-dtype bf16: bfloat16 logits are judged through `mqacheck run --kernel` or "
                      "mqacheck.check; in process, float32 logits (accepted: --logits-dtype fp32)");
  for (const auto& c : suite_.cases) inputs::check_generated_case(c);
  // Checked now, created when the reports are written: a run that ends early leaves nothing.
  if (o.out) {
    const std::vector<std::string> names = reports::report_file_names();
    const std::vector<std::string_view> files(names.begin(), names.end());
    io::resolve_output_folder("--out", *o.out, files, std::array{io::named_input{"--cases", cases_file_}});
    out_folder_ = *o.out;
  }
  verdict::run_options ro;
  ro.threads = o.threads;
  ro.engines = reference_engines();
  ro.diagnose = o.diagnose;
  run_ = std::make_unique<verdict::kernel_suite_run>(suite_, std::move(k), std::move(ro));
}

suite_run::~suite_run() = default;

const verdict::kernel_case* suite_run::next() {
  const verdict::kernel_case* c = run_->next();
  // What the judge holds must still be what it computed when the kernel is done (the kernel shares
  // its memory): the session's rule for a kernel behind an adapter.
  if (c) digests_ = {bundle::digest_of(*c->reference), c->centre ? bundle::digest_of(*c->centre) : ""};
  return c;
}

std::string suite_run::case_toml() const {
  const verdict::kernel_case* c = run_->current();
  return c ? cases::resolved_toml(c->spec, suite_.name) : "";
}

std::int64_t suite_run::output_width() const {
  const verdict::kernel_case* c = run_->current();
  if (!c) return 0;
  return c->contract.columns == kernels::columns_layout::relative ? compare::relative_width(c->problem) : c->problem.n;
}

std::int64_t suite_run::output_stride() const { return runner::padded_stride(output_width()); }

void suite_run::unsupported(const std::string& why) { run_->unsupported(why); }

std::string suite_run::record(const output_array* first, const output_array* second,
                              const std::vector<launch_times>& launches, const std::vector<launch_times>& timing,
                              const std::string& error) {
  const verdict::kernel_case* current = run_->current();
  if (!current) throw std::logic_error("suite_run::record: no case under way");
  const verdict::kernel_case& c = *current;
  external::case_outcome out;
  out.error = error;
  const auto add_error = [&](const std::string& e) { out.error = out.error.empty() ? e : out.error + "; " + e; };
  for (const auto& l : launches) out.launches.push_back(record_of(l));
  for (const auto& l : timing) out.timing.push_back(record_of(l));
  std::string judged_on = "not judged";
  if (first != nullptr) {
    judged_on = "host";
#ifdef MQA_HAVE_GPU
    if (first->device >= 0) {
      const std::string why = judged_on_device(c, *first, second, threads_, out);
      judged_on = why.empty() ? "device" : "host: " + why;
    }
    if (!out.judgement) {
      // Whatever lies on a GPU is brought to the host, and judged there; a copy the device refuses
      // is this case's error, not the run's end. Host outputs touch no GPU (a GPU build may run on a
      // machine without one).
      std::optional<device_path::host_copy> logits, repeat;
      bool copied = true;
      try {
        if (first->device >= 0 || (second && second->device >= 0)) {
          const device_path::current_device_kept caller;
          if (first->device >= 0) logits = device_path::copied_to_host(*first, "copy launch 1's output to the host");
          if (second && second->device >= 0)
            repeat = device_path::copied_to_host(*second, "copy launch 2's output to the host");
        }
      } catch (const std::runtime_error& e) {
        add_error(fmt::format("copying the outputs to the host: {}", e.what()));
        copied = false;
      }
      if (copied)
        judged_on_host(c, logits ? logits->array : *first, repeat ? &repeat->array : second, diagnose_, threads_, out);
    }
#else
    const bool second_on_gpu = second && second->device >= 0;
    if (first->device >= 0) {
      add_error("an output in a GPU's memory, and this build has no GPU path (configure with -DMQA_GPU=CUDA or HIP)");
    } else {
      // Launch 1 still judged where only launch 2's output cannot be read, as for one of the wrong shape.
      if (second_on_gpu) add_error("launch 2's output: in a GPU's memory, and this build has no GPU path");
      judged_on_host(c, *first, second_on_gpu ? nullptr : second, diagnose_, threads_, out);
    }
#endif
  }
  if (bundle::digest_of(*c.reference) != digests_.first ||
      (c.centre && bundle::digest_of(*c.centre) != digests_.second)) {
    add_error("mqacheck's reference changed in its memory during the launches (the kernel shares the judge's process)");
    out.judgement.reset();
  }
  if (!out.judgement) judged_on = "not judged";
  run_->record(std::move(out));
  return judged_on;
}

verdict::suite_report suite_run::finish(const std::string& label) {
  verdict::suite_report r = run_->finish(label.empty() ? std::nullopt : std::optional(label), 0,
                                         {"in process: the kernel ran in mqacheck's own process, where it could read "
                                          "the judge's memory (the reference included), and its outputs were not "
                                          "watched for writes after it returned; `mqacheck run --kernel` keeps a "
                                          "kernel in a process of its own, given the inputs only"});
  r.kernel->in_process = true;
  if (out_folder_) {
    // The run is done: a folder that can no longer be written is said, and the report kept.
    try {
      io::output_set out("--out", *out_folder_, reports::report_file_names(),
                         std::array{io::named_input{"--cases", cases_file_}});
      reports::write_report_files(out, reports::suite_json(r));
      written_ = "reports: " + reports::written_report_files(out);
    } catch (const input_error& e) {
      write_error_ = e.what();
    }
  }
  return r;
}

int run_exit_status(const verdict::suite_report& r) {
  if (r.nothing_judged()) return 2;
  return r.expectations_hold() ? 0 : 1;
}

}  // namespace mqa::api
