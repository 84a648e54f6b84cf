#include "run_kernel.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>

#include "interrupt_guard.hpp"
#include "validator/compare/finding.hpp"
#include "validator/external/session.hpp"
#include "reports/escape.hpp"
#include "validator/input_error.hpp"
#include "validator/judge/suspicion.hpp"
#include "seconds_option.hpp"

namespace mqa::cli {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

[[noreturn]] void end_interrupted() {
  std::fflush(stdout);
  fmt::print(stderr, "mqacheck: interrupted: the adapter was stopped and its scratch folder removed; no report written\n");
  interrupt_guard::reraise();
}

}  // namespace

void add_kernel_flags(CLI::App& run, kernel_flags& k, CLI::Option* variant) {
  CLI::Option* kernel =
      run.add_option("--kernel", k.command,
                     "judge a kernel that lives elsewhere: COMMAND (run by /bin/sh -c) starts its adapter, which "
                     "answers JSON lines (docs/protocol.md)")
          ->check(CLI::Validator(
              [](std::string& s) { return s.find_first_not_of(" \t") == std::string::npos ? "the command is empty" : ""; },
              "COMMAND"))
          ->excludes(variant);
  std::vector<CLI::Option*> dependent = k.declared.add_to(run);
  dependent.push_back(run.add_option("--timeout", k.timeout_seconds,
                                     "seconds the adapter may take per request (its start-up counts toward the first)")
                          ->check(positive_seconds())
                          ->capture_default_str());
  dependent.push_back(run.add_option("--operation", k.operation,
                                     "what the kernel computes: prefill (fp8_mqa_logits), paged (decode, "
                                     "fp8_paged_mqa_logits) or both; cases of another operation are skipped")
                          ->check(CLI::IsMember({"prefill", "paged", "both"}))
                          ->capture_default_str());
  dependent.push_back(run.add_option("--timing-launches", k.timing_launches,
                                     "launches of each case after the two judged ones, timed and not judged (each must "
                                     "succeed): the kernel's time is the best of launch 2 and these, with their median "
                                     "and noise in report.json; 0 times launch 2 alone")
                          ->check(CLI::Range(0, 100))
                          ->capture_default_str());
  dependent.push_back(run.add_option("--must-produce", k.must_produce,
                                     "the kernel carries a planted bug: it must be caught by one of these finding "
                                     "classes on at least one case (repeatable)"));
  CLI::Option* indexer = run.add_flag("--topk-indices", k.topk_indices,
                                      "the kernel is an indexer: its adapter also writes each row's top-k "
                                      "indices (int64 [M, k], -1 padding; \"topk_out\" in docs/protocol.md), "
                                      "judged against the exact values under the contract's bound");
  dependent.push_back(indexer);
  dependent.push_back(run.add_option("--topk-columns", k.topk_columns,
                                     "what an index counts from: absolute (the key) or relative (the key minus the "
                                     "row's ks)")
                          ->capture_default_str()
                          ->needs(indexer));
  dependent.push_back(run.add_flag("--topk-sorted", k.topk_sorted,
                                   "the indices promise descending order of value (torch.topk's sorted=True)")
                          ->needs(indexer));
  for (CLI::Option* o : dependent) o->needs(kernel);
}

verdict::suite_report run_kernel(const cases::suite& s, verdict::kernel_options k, const verdict::run_options& o) {
  const interrupt_guard guard;
  k.interrupted = interrupt_guard::requested;
  try {
    verdict::suite_report report = verdict::run_kernel_suite(s, k, o);
    // A signal after the run last looked: the run is over, but the user asked for no report.
    if (interrupt_guard::requested()) end_interrupted();
    return report;
  } catch (const external::interrupted_error&) {
    // The adapter was stopped and the scratch folder removed while the exception left the run.
    end_interrupted();
  }
}

void print_kernel_summary(const verdict::suite_report& r) {
  const verdict::external_kernel& k = *r.kernel;
  // The label, notes and errors come from the adapter: shown, never obeyed (reports/escape.hpp).
  fmt::print("\nkernel '{}': {}\n  contract: {}\n  adapter started {} time(s), timeout {} s per request\n",
             reports::terminal_text(k.label.empty() ? "kernel" : k.label), reports::terminal_text(k.command), k.contract, k.adapter_starts, k.timeout_seconds);
  std::vector<double> kernel_time, overhead, ratio;
  for (const auto& c : r.results) {
    const auto o = c.overhead_seconds();
    if (!o) continue;
    double both = 0;
    for (const auto& l : c.launches) both += *l.kernel_seconds;
    kernel_time.push_back(both);
    overhead.push_back(*o);
    if (both > 0) ratio.push_back(*o / both);
  }
  if (overhead.empty())
    fmt::print("  adapter overhead: unknown (the adapter reports no \"seconds\")\n");
  else
    fmt::print("  per case, two launches: kernel {:.3f} ms, adapter overhead {:.3f} ms ({:.1f}% of the kernel's "
               "time), medians over {} cases\n",
               median(kernel_time) * 1e3, median(overhead) * 1e3, median(ratio) * 100, overhead.size());
  // Launch 1 apart: a JIT compilation (Triton, DeepGEMM) lands there, on the first case most.
  std::vector<double> warmup;
  for (const auto& c : r.results)
    if (c.warmup_seconds) warmup.push_back(*c.warmup_seconds);
  if (!warmup.empty())
    fmt::print("  warm-up (launch 1 of each case, compilation included): first case {:.3f} ms, median {:.3f} ms; "
               "the time column is the best of launch 2 and the timing launches\n",
               warmup.front() * 1e3, median(warmup) * 1e3);
  for (const auto& n : k.notes) fmt::print("  note: {}\n", reports::terminal_text(n));
  for (const auto& c : r.results)
    if (c.judgement.suspected)
      fmt::print("  case '{}': {}\n", reports::terminal_text(c.case_name), judge::suspicion_note(*c.judgement.suspected));
  for (const auto& c : r.results) {
    if (c.error.empty()) continue;
    std::string indented;
    for (const char ch : c.error) indented += ch == '\n' ? std::string("\n    ") : std::string(1, ch);
    fmt::print("  error on case '{}': {}\n", reports::terminal_text(c.case_name), reports::terminal_text(indented));
  }
}


}  // namespace mqa::cli
