// What `run` (and `certify`) print on stdout: the result table, the skipped pairs, the timings
// when asked, the external kernel's summary and the expectations.
#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "reports/escape.hpp"
#include "reports/report.hpp"
#include "run_command.hpp"

namespace mqa::cli {
namespace {

std::size_t case_column_width(const verdict::suite_report& r) {
  std::size_t width = 4;
  for (const auto& c : r.results) width = std::max(width, c.case_name.size());
  return width;
}

void print_table(const verdict::suite_report& r, bool brief) {
  const std::size_t case_width = case_column_width(r);
  std::size_t variant_width = 7;
  for (const auto& c : r.results) variant_width = std::max(variant_width, c.variant.size());
  const auto listed = [&](const verdict::case_result& c) { return !brief || !c.as_expected(); };
  const auto shown_rows = std::count_if(r.results.begin(), r.results.end(), listed);
  if (brief && shown_rows < static_cast<std::ptrdiff_t>(r.results.size()))
    fmt::print("{} of {} results as expected, not listed (--brief; the reports hold every row)\n",
               r.results.size() - shown_rows, r.results.size());
  if (shown_rows == 0) return;
  // ULPs of the magnitude A first (compare/ulp_scales.hpp): raw ULPs to an exact value that cancelled
  // measure the cancellation, not the kernel; they follow.
  fmt::print("{:<{}}  {:<{}}  {:<7}  {:>9}  {:>9}  {:>10}  {:>8}  {:>9}  {:>6}  {:>9}  {}\n", "case", case_width, "variant",
             variant_width, "verdict", "p99 ULP/A", "max ULP/A", "max ULP", "p99 ULP", "err/bound", "recall", "time",
             "findings");
  for (const auto& c : r.results) {
    if (!listed(c)) continue;
    const compare::metrics& m = c.judgement.stats;
    if (!c.judged) {  // an external kernel's adapter failed before anything could be compared
      fmt::print("{:<{}}  {:<{}}  {:<7}  {:>9}  {:>9}  {:>10}  {:>8}  {:>9}  {:>6}  {:>9}  {}\n", c.case_name, case_width,
                 reports::terminal_text(c.variant), variant_width, c.outcome(), "-", "-", "-", "-", "-", "-", "-",
                 reports::terminal_text(reports::summary(c)));
      continue;
    }
    // An external kernel's variant name is its adapter's label: shown, never obeyed.
    fmt::print("{:<{}}  {:<{}}  {:<7}  {:>9}  {:>9}  {:>10}  {:>8}  {:>9}  {:>6}  {:>7.2f}ms  {}\n", c.case_name,
               case_width, reports::terminal_text(c.variant), variant_width, c.outcome(),
               reports::shown(m.scaled.magnitude.percentile(0.99)), reports::shown(m.scaled.magnitude.max()),
               reports::shown_ulps(m.ulps, 1), reports::shown_ulps(m.ulps, 0.99),
               reports::shown(m.max_error_over_bound()),
               reports::shown(m.topk_recall(), 4), c.kernel_seconds * 1e3, reports::summary(c));
  }
}

// One count line by default (a suite of many variants skips hundreds of pairs: the reports list
// them all); with --verbose every pair with its reason.
void print_skipped(const verdict::suite_report& r, bool verbose) {
  if (r.skipped.empty()) return;
  if (!verbose) {
    fmt::print("{} pair{} skipped: --verbose lists them\n", r.skipped.size(), r.skipped.size() == 1 ? "" : "s");
    return;
  }
  for (const auto& p : r.skipped) fmt::print("skipped: {}\n", reports::terminal_text(p.sentence()));
}

// Built-in variants: where each case's time went past inputs and reference, summed over its variants.
void print_builtin_stages(const verdict::suite_report& r, const verdict::case_timing& t) {
  runner::stage_seconds sum;
  double kernels = 0;
  for (const auto& c : r.results) {
    if (c.case_name != t.case_name) continue;
    sum += c.seconds;
    kernels += c.kernel_seconds;
  }
  fmt::print("{}: output buffers {:.2f} s, launches {:.2f} s (the kernels' own timer, one launch each: {:.2f} s), "
             "comparator {:.2f} s, determinism {:.2f} s, suspicion {:.2f} s, diagnosis {:.2f} s; buffers and launches "
             "ran alongside judging but for {:.2f} s waited for\n",
             t.case_name, sum.buffers, sum.launches, kernels, sum.judge, sum.determinism, sum.suspicion, sum.diagnosis,
             sum.waited);
}

// An external kernel: the stages mqacheck measured around its adapter. The adapter's own timer is
// shown only where it gave one; launches it never answered have no stages.
void print_kernel_stages(const verdict::case_result& c) {
  std::vector<std::string> stages;
  if (c.inputs_written_seconds) stages.push_back(fmt::format("inputs written {:.3f} s", *c.inputs_written_seconds));
  for (std::size_t i = 0; i < c.launches.size(); ++i) {
    const verdict::adapter_launch& l = c.launches[i];
    std::string launch = fmt::format("launch {}: output poisoned {:.3f} s, adapter's turn {:.3f} s", i + 1,
                                     l.output_written_seconds, l.response_seconds);
    if (l.kernel_seconds) launch += fmt::format(" (its kernel {:.3f} s)", *l.kernel_seconds);
    stages.push_back(launch + fmt::format(", output read {:.3f} s", l.output_read_seconds));
  }
  if (c.judged)
    stages.push_back(fmt::format("comparator {:.3f} s, determinism {:.3f} s, suspicion {:.3f} s, diagnosis {:.3f} s",
                                 c.seconds.judge, c.seconds.determinism, c.seconds.suspicion, c.seconds.diagnosis));
  std::string line = c.case_name + ":";
  for (std::size_t i = 0; i < stages.size(); ++i) line += (i ? "; " : " ") + stages[i];
  if (stages.empty()) line += " nothing measured (the adapter was not reached)";
  fmt::print("{}\n", reports::terminal_text(line));
}

void print_timings(const verdict::suite_report& r) {
  const std::size_t case_width = case_column_width(r);
  fmt::print("\n{:<{}}  {:>9}  {:>9}  {:>9}\n", "case", case_width, "inputs", "reference", "total");
  for (const auto& t : r.timings)
    fmt::print("{:<{}}  {:>8.2f}s  {:>8.2f}s  {:>8.2f}s\n", t.case_name, case_width, t.inputs_seconds,
               t.reference_seconds, t.total_seconds);
  if (!r.kernel) {
    for (const auto& t : r.timings) print_builtin_stages(r, t);
    return;
  }
  for (const auto& c : r.results) print_kernel_stages(c);
}

}  // namespace

void print_results(const verdict::suite_report& r, const terminal_flags& shown) {
  print_table(r, shown.brief);
  print_skipped(r, shown.verbose);
  if (shown.timing) print_timings(r);
  if (r.kernel) print_kernel_summary(r);
  const auto broken = r.broken_expectations();
  std::size_t caught = 0;
  for (const auto& m : r.mutants) caught += !m.caught_by.empty();
  const std::string part = r.shard ? fmt::format(" shard {}", r.shard->to_string()) : "";
  fmt::print("\nsuite '{}'{}: {} results in {:.1f} s; mutants caught {}/{}{}; {}\n",
             reports::terminal_text(r.suite_name), part, r.results.size(), r.seconds, caught, r.mutants.size(),
             r.shard ? " in this shard (coverage is judged by mqacheck merge)" : "",
             broken.empty() ? "every expectation holds" : "EXPECTATIONS BROKEN:");
  for (const auto& b : broken) fmt::print("  - {}\n", reports::terminal_text(b));
}

}  // namespace mqa::cli
