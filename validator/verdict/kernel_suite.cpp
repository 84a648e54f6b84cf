#include "kernel_suite.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <stdexcept>

#include "kernels/contract_text.hpp"
#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "validator/elapsed.hpp"
#include "validator/external/scratch.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/layout/layout.hpp"
#include "validator/judge/references.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::verdict {
namespace {

using clock = std::chrono::steady_clock;

kernels::contract contract_for(const kernel_options& k, const cases::case_spec& c) {
  kernels::contract contract = k.contract;
  contract.mask = k.mask ? *k.mask : (c.clean_logits ? kernels::masking::clean : kernels::masking::dont_care);
  if (contract.columns == kernels::columns_layout::relative) contract.mask = kernels::masking::dont_care;
  return contract;
}

// Launch 1 may include the kernel's compilation (Triton's or DeepGEMM's JIT): it is the warm-up,
// kept apart. The kernel's time is the best of launch 2 and the timing launches, with their median
// beside it: one launch of a GPU kernel varies by tens of percent (clocks, other work), and a
// slowdown limit judged on single launches flags noise. Each launch's time is the adapter's own
// "seconds" where every timed launch has one, else its whole turn (all from one clock, never mixed).
void timed_launches(case_result& r) {
  if (!r.launches.empty()) r.warmup_seconds = r.launches.front().kernel_seconds;
  std::vector<const adapter_launch*> timed;
  if (r.launches.size() > 1) timed.push_back(&r.launches[1]);
  for (const auto& l : r.timing_launches) timed.push_back(&l);
  if (timed.empty()) {  // launch 2 never answered: launch 1's time, where the adapter gave one
    r.kernel_seconds = r.launches.empty() ? 0 : r.launches.front().kernel_seconds.value_or(0);
    return;
  }
  const bool by_adapter = std::all_of(timed.begin(), timed.end(), [](const adapter_launch* l) { return l->kernel_seconds.has_value(); });
  std::vector<double> seconds;
  for (const adapter_launch* l : timed) seconds.push_back(by_adapter ? *l->kernel_seconds : l->response_seconds);
  std::sort(seconds.begin(), seconds.end());
  const std::size_t k = seconds.size();
  r.kernel_seconds = seconds.front();
  r.kernel_seconds_median = k % 2 ? seconds[k / 2] : (seconds[k / 2 - 1] + seconds[k / 2]) / 2;
  r.kernel_launches = static_cast<int>(k);
}

}  // namespace

// --operation's word for what the kernel computes.
std::string operation_name(const kernel_options& k) {
  if (k.prefill && k.paged) return "both";
  return k.paged ? "paged" : "prefill";
}

// The scratch space one case needs at once: its bundle, both judged launches' outputs and, with
// timing launches, the one output they share; for an indexer each of those launches also leaves
// int64 [m, k] indices (k unset: at most 2048, layout::default_topk).
std::uintmax_t scratch_bytes_per_case(const cases::suite& s, int timing_launches, bool topk) {
  const std::uintmax_t outputs = timing_launches > 0 ? 3 : 2;
  std::uintmax_t most = 0;
  for (const auto& c : s.cases) {
    const auto m = static_cast<std::uintmax_t>(c.m), n = static_cast<std::uintmax_t>(c.n);
    const auto stride = static_cast<std::uintmax_t>(runner::padded_stride(c.n));
    std::uintmax_t inputs = m * c.heads * c.head_dim + n * c.head_dim + 4 * (n + m * c.heads + 2 * m);
    if (c.layout.kind == cases::layout_kind::paged)  // the cache, its table and lengths (load.cpp resolved them)
      inputs += static_cast<std::uintmax_t>(c.layout.num_blocks.value_or(0) * c.layout.page_bytes.value_or(0)) +
                4 * static_cast<std::uintmax_t>(c.layout.max_blocks.value_or(0)) * m + 4 * m;
    const std::uintmax_t indices = topk ? 8 * m * static_cast<std::uintmax_t>(c.topk.value_or(2048)) : 0;
    most = std::max(most, inputs + 4 * m * n + outputs * (4 * m * stride + indices));
  }
  return most + most / 4 + (1 << 20);
}

kernel_suite_run::kernel_suite_run(const cases::suite& s, kernel_options k, run_options o)
    : s_(s), k_(std::move(k)), o_(std::move(o)), start_(clock::now()) {
  report_.suite_name = s.name;
  report_.file = s.file.string();
  const std::string contract =
      k_.mask ? kernels::describe(k_.contract)
              : kernels::describe(k_.contract) + std::string(kernels::kMaskFromCasesNote);
  report_.kernel = external_kernel{.command = k_.command,
                                   .label = "",
                                   .contract = contract,
                                   .operation = operation_name(k_),
                                   .timeout_seconds = k_.timeout_seconds,
                                   .adapter_starts = 0,
                                   .notes = {}};
  report_.shard = o_.shard;  // one variant: the pairs are the cases
}

kernel_case* kernel_suite_run::next() {
  if (current_) throw std::logic_error("kernel_suite_run::next: the case under way was neither recorded nor skipped");
  auto check_interrupt = [&] {
    if (k_.interrupted && k_.interrupted()) throw external::interrupted_error();
  };
  while (at_ < s_.cases.size()) {
    const std::size_t ci = at_++;
    const cases::case_spec& c = s_.cases[ci];
    case_record& record = report_.cases.emplace_back();
    record = {c.name, std::nullopt, c.m, c.n, c.heads, c.head_dim, c.clean_logits, c.topk};
    if (o_.shard && !o_.shard->owns(ci)) continue;
    check_interrupt();
    if (o_.progress) o_.progress(done_, s_.cases.size(), c.name);
    if (const bool paged_case = c.layout.kind == cases::layout_kind::paged; paged_case ? !k_.paged : !k_.prefill) {
      report_.skipped.push_back({c.name, "kernel",
                                 fmt::format("the case is {}; the kernel computes {} (--operation)",
                                             paged_case ? "paged decode" : "prefill",
                                             paged_case ? "prefill" : "paged decode")});
      ++done_;
      continue;
    }
    // Built where it stays: the problem points into the tensors, the references into the problem.
    kernel_case& kc = current_.emplace();
    kc.index = ci;
    kc.started = clock::now();
    kc.timing.case_name = c.name;
    kc.spec = c;
    kc.tensors = inputs::generate(c);
    record.inputs_fingerprint = inputs::fingerprint(kc.tensors);
    if (!kc.spec.topk) kc.spec.topk = layout::default_topk({kc.tensors.ks, kc.tensors.ke}, c.n);
    kc.timing.inputs_seconds = seconds_since(kc.started);
    check_interrupt();

    kc.problem = inputs::problem_of(kc.spec, kc.tensors);
    if (kc.tensors.paged) kc.paged = inputs::paged_problem_of(kc.spec, kc.tensors);
    kc.contract = contract_for(k_, c);
    // A modelled contract names an instruction: a case it cannot take (formats, head_dim) is not
    // the kernel's to run, as for built-in variants.
    if (const mma::instruction* model = bounds::traits(kc.contract.dot).model) {
      if (const auto why = mma::why_unusable(*model, c.q_format, c.k_format, c.head_dim, kc.contract.promote_every)) {
        report_.skipped.push_back({c.name, "kernel", *why});
        current_.reset();
        ++done_;
        continue;
      }
    }
    // The kernel gets the inputs only; the reference stays with the judge.
    kc.references = std::make_unique<judge::reference_cache>(kc.problem, kc.paged_or_null(), o_.engines, o_.threads);
    kc.reference = &kc.references->reference(kc.contract);
    check_interrupt();
    kc.centre = kc.references->centre(kc.contract);
    kc.timing.reference_seconds = kc.references->reference_seconds();
    return &kc;
  }
  return nullptr;
}

void kernel_suite_run::unsupported(const std::string& why) {
  if (!current_) throw std::logic_error("kernel_suite_run::unsupported: no case under way");
  report_.skipped.push_back({current_->spec.name, "kernel", "the kernel does not take this case: " + why});
  current_.reset();
  ++done_;
}

void kernel_suite_run::record(external::case_outcome out) {
  if (!current_) throw std::logic_error("kernel_suite_run::record: no case under way");
  const kernel_case& c = *current_;
  case_result r;
  r.case_name = c.spec.name;
  r.is_mutant = !k_.must_produce.empty();
  r.judged = out.judgement.has_value();
  if (out.judgement) r.judgement = std::move(*out.judgement);
  r.error = std::move(out.error);
  const auto timed = [](const external::launch_record& l) {
    return adapter_launch{.kernel_seconds = l.kernel_seconds,
                          .response_seconds = l.response_seconds,
                          .exchange_seconds = l.exchange_seconds,
                          .output_written_seconds = l.output_written_seconds,
                          .output_read_seconds = l.output_read_seconds};
  };
  std::transform(out.launches.begin(), out.launches.end(), std::back_inserter(r.launches), timed);
  std::transform(out.timing.begin(), out.timing.end(), std::back_inserter(r.timing_launches), timed);
  r.inputs_written_seconds = out.inputs_written_seconds;
  r.seconds.judge = out.judging.compare;
  r.seconds.determinism = out.judging.determinism;
  r.seconds.suspicion = out.judging.suspicion;
  r.seconds.diagnosis = out.judging.diagnosis;
  timed_launches(r);
  for (const auto& f : r.judgement.findings)
    r.caught |= std::find(k_.must_produce.begin(), k_.must_produce.end(), compare::to_string(f.kind)) != k_.must_produce.end();
  report_.results.push_back(std::move(r));
  case_timing timing = c.timing;
  timing.total_seconds = seconds_since(c.started);
  report_.timings.push_back(timing);
  current_.reset();
  ++done_;
}

suite_report kernel_suite_run::finish(const std::optional<std::string>& label, int starts,
                                      std::vector<std::string> notes) {
  current_.reset();
  if (o_.progress) o_.progress(s_.cases.size(), s_.cases.size(), "");
  suite_report report = std::move(report_);
  const std::string name = label.value_or("kernel");
  for (auto& r : report.results) r.variant = name;
  for (auto& p : report.skipped) p.variant = name;
  report.variants.push_back({name, !k_.must_produce.empty(), report.kernel->contract});
  report.kernel->label = label.value_or("");
  report.kernel->adapter_starts = starts;
  report.kernel->notes = std::move(notes);
  if (!k_.must_produce.empty()) {
    mutant_coverage m{name, "planted in the kernel (--must-produce)", k_.must_produce, {}};
    for (const auto& r : report.results)
      if (r.caught) m.caught_by.push_back(r.case_name);
    report.mutants.push_back(std::move(m));
  }
  report.seconds = seconds_since(start_);
  return report;
}

suite_report run_kernel_suite(const cases::suite& s, const kernel_options& k, const run_options& o) {
  kernel_suite_run run(s, k, o);
  const external::scratch_folder scratch(scratch_bytes_per_case(s, k.timing_launches, k.topk.has_value()));
  external::session adapter({k.command, k.timeout_seconds, k.interrupted, o.threads, o.diagnose, k.timing_launches, k.topk},
                            scratch);
  std::optional<std::string> label;
  while (kernel_case* c = run.next()) {
    external::case_outcome out = adapter.run_case({s.name, c->spec, c->tensors}, c->problem, c->paged_or_null(),
                                                  *c->reference, c->centre, c->contract);
    if (out.unsupported) {  // the kernel's own limit (docs/protocol.md): skipped, as an --operation mismatch is
      run.unsupported(*out.unsupported);
      continue;
    }
    if (!label && out.label) label = out.label;
    run.record(std::move(out));
  }
  adapter.finish();
  return run.finish(label, adapter.starts(), adapter.notes());
}

}  // namespace mqa::verdict
