// `mqacheck run` and `mqacheck variants`: suites against the variants this build knows.
#include "run_command.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include "commands.hpp"
#include "kernels/registry/registry.hpp"
#include "reference_engine.hpp"
#include "reports/escape.hpp"
#include "reports/formats.hpp"
#include "reports/report.hpp"
#include "validator/activity.hpp"
#include "validator/case/load.hpp"
#include "validator/input_error.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/io/output_set.hpp"
#include "validator/verdict/verdict.hpp"

namespace mqa::cli {
namespace {

// The contract, and the operations the variant implements (prefill; paged decode).
std::string contract_line(const kernels::variant& v) {
  const char* operations = v.run && v.run_paged ? "prefill and paged" : (v.run ? "prefill" : "paged only");
  return kernels::describe(v.declared) + "; " + operations;
}

void list_variants() {
  std::size_t width = 0;
  for (const auto& v : kernels::all_variants()) width = std::max(width, v.name.size());
  for (const auto& v : kernels::all_variants()) {
    if (v.must_produce.empty()) {
      fmt::print("{:<{}}  model   {}\n{:<{}}          {}\n", v.name, width, contract_line(v), "", width, v.description);
    } else {
      std::string must;
      for (const auto& s : v.must_produce) must += (must.empty() ? "" : " or ") + s;
      fmt::print("{:<{}}  mutant  {}: must produce {}\n{:<{}}          {}\n", v.name, width, v.bug_class, must, "", width,
                 v.description);
    }
  }
}

// A one-line progress bar on a terminal; nothing when stderr is a file or a pipe (CI logs).
void show_progress(std::size_t done, std::size_t total, const std::string& what) {
  static const bool terminal = ::isatty(STDERR_FILENO);
  if (!terminal || total < 8) return;
  const int width = 30;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  fmt::print(stderr, "\r[{}{}] {}/{} {:<50.50}", std::string(filled, '#'), std::string(width - filled, '.'), done,
             total, what);
  if (done == total) fmt::print(stderr, "\r{:<100}\r", "");
}

struct run_options {
  run_flags run;
  std::string out;
  bool out_given = false;  // `--out ''` is an error, not "no reports"
  std::string shard;
};

int run_command(const run_options& o) {
  const cases::suite s = load_selected_suite(o.run);
  // Every argument is checked before the first case runs; --out is created only at the end.
  check_run_flags(s, o.run);
  std::optional<verdict::shard> shard;
  if (!o.shard.empty()) shard = verdict::parse_shard("--shard", o.shard);
  std::unique_ptr<io::output_set> reports;
  if (o.out_given) reports = std::make_unique<io::output_set>("--out", o.out, reports::report_file_names());
  const activity::scope doing(fmt::format("run {}", o.run.cases_file));
  const verdict::suite_report r = run_selected(s, o.run, shard);
  print_results(r);
  if (reports) {
    write_files(*reports, reports::report_files(reports::suite_json(r)));
    fmt::print("reports: {}\n", reports::written_report_files(*reports));
  }
  return run_exit_status(r);
}

}  // namespace

void add_run_flags(CLI::App& cmd, run_flags& f) {
  cmd.add_option("--cases", f.cases_file, "suite file (TOML)")->required();
  cmd.add_option("--case", f.case_names,
                 "run only this case of the suite (repeatable; default: every case). A baseline of the whole suite "
                 "then reports the other cases missing");
  CLI::Option* variant =
      cmd.add_option("--variant", f.variants, "variants to run (repeatable; default: all, see `mqacheck variants`)");
  cmd.add_option("--threads", f.threads, "worker threads (default: all cores)");
  cmd.add_flag("--no-diagnosis{false}", f.diagnose,
               "skip the diagnosis (findings otherwise name the planted bug mqacheck's model reproduces them with)");
  add_kernel_flags(cmd, f.kernel, variant);
}

cases::suite load_selected_suite(const run_flags& f) {
  cases::suite s = cases::load_suite(f.cases_file);
  if (f.case_names.empty()) return s;
  for (const auto& name : f.case_names) {
    if (std::none_of(s.cases.begin(), s.cases.end(), [&](const cases::case_spec& c) { return c.name == name; })) {
      std::string names;
      for (const auto& c : s.cases) names += (names.empty() ? "" : ", ") + c.name;
      throw input_error(fmt::format("--case {}: {} has no case of that name (its cases: {})", name, f.cases_file, names));
    }
  }
  std::erase_if(s.cases, [&](const cases::case_spec& c) {
    return std::find(f.case_names.begin(), f.case_names.end(), c.name) == f.case_names.end();
  });
  return s;
}

void check_run_flags(const cases::suite& s, const run_flags& f) {
  if (!f.kernel.command.empty()) kernel_options_of(f.kernel);  // every contract flag, before any work
  else verdict::select_variants(s, f.variants);
  for (const auto& c : s.cases) inputs::check_generated_case(c);
}

verdict::suite_report run_selected(const cases::suite& s, const run_flags& f, std::optional<verdict::shard> shard) {
  verdict::run_options ro;
  ro.variants = f.variants;
  ro.shard = shard;
  ro.threads = f.threads;
  ro.progress = show_progress;
  ro.engines = reference_engines();
  ro.diagnose = f.diagnose;
  if (!f.kernel.command.empty()) return run_kernel(s, kernel_options_of(f.kernel), ro);
  return verdict::run_suite(s, ro);
}

void print_results(const verdict::suite_report& r) {
  std::size_t case_width = 4, variant_width = 7;
  for (const auto& c : r.results) {
    case_width = std::max(case_width, c.case_name.size());
    variant_width = std::max(variant_width, c.variant.size());
  }
  // ULPs of the magnitude A first (compare/ulp_scales.hpp): raw ULPs to an exact value that cancelled
  // measure the cancellation, not the kernel; they follow.
  fmt::print("{:<{}}  {:<{}}  {:<7}  {:>9}  {:>9}  {:>10}  {:>8}  {:>9}  {:>6}  {:>9}  {}\n", "case", case_width, "variant",
             variant_width, "verdict", "p99 ULP/A", "max ULP/A", "max ULP", "p99 ULP", "err/bound", "recall", "time",
             "findings");
  for (const auto& c : r.results) {
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
               reports::shown(m.max_error_over_bound()), reports::shown(m.topk_recall(), 4), c.kernel_seconds * 1e3,
               reports::summary(c));
  }
  // Skipped pairs, one line per variant: its first reason and how many cases (the reports list all).
  std::vector<std::pair<std::string, std::vector<std::string>>> skipped;
  for (const auto& p : r.skipped) {
    auto found = std::find_if(skipped.begin(), skipped.end(), [&](const auto& e) { return e.first == p.variant; });
    if (found == skipped.end()) found = skipped.insert(skipped.end(), {p.variant, {}});
    found->second.push_back(p.sentence());
  }
  for (const auto& [variant, lines] : skipped)
    fmt::print("skipped: {}{}\n", lines.front(),
               lines.size() > 1 ? fmt::format(" (and {} more case{})", lines.size() - 1, lines.size() > 2 ? "s" : "") : "");
  fmt::print("\n{:<{}}  {:>9}  {:>9}  {:>9}\n", "case", case_width, "inputs", "reference", "total");
  for (const auto& t : r.timings)
    fmt::print("{:<{}}  {:>8.2f}s  {:>8.2f}s  {:>8.2f}s\n", t.case_name, case_width, t.inputs_seconds,
               t.reference_seconds, t.total_seconds);
  // Where each case's time went past inputs and reference, summed over its variants.
  for (const auto& t : r.timings) {
    runner::stage_seconds sum;
    double kernels = 0;
    for (const auto& c : r.results) {
      if (c.case_name != t.case_name) continue;
      sum += c.seconds;
      kernels += c.kernel_seconds;
    }
    fmt::print("{}: output buffers {:.2f} s, launches {:.2f} s (the kernels' own timer, one launch each: {:.2f} s), "
               "comparator {:.2f} s, determinism {:.2f} s, suspicion {:.2f} s, diagnosis {:.2f} s; buffers and launches ran "
               "alongside judging but for {:.2f} s waited for\n",
               t.case_name, sum.buffers, sum.launches, kernels, sum.judge, sum.determinism, sum.suspicion, sum.diagnosis,
               sum.waited);
  }
  if (r.kernel) print_kernel_summary(r);
  const auto broken = r.broken_expectations();
  std::size_t caught = 0;
  for (const auto& m : r.mutants) caught += !m.caught_by.empty();
  const std::string part = r.shard ? fmt::format(" shard {}", r.shard->to_string()) : "";
  fmt::print("\nsuite '{}'{}: {} results in {:.1f} s; mutants caught {}/{}{}; {}\n", reports::terminal_text(r.suite_name), part,
             r.results.size(), r.seconds, caught, r.mutants.size(),
             r.shard ? " in this shard (coverage is judged by mqacheck merge)" : "",
             broken.empty() ? "every expectation holds" : "EXPECTATIONS BROKEN:");
  for (const auto& b : broken) fmt::print("  - {}\n", reports::terminal_text(b));
}

void write_files(io::output_set& out, const std::vector<reports::report_file>& files) {
  std::vector<io::stream_writer> writers;
  for (const auto& f : files) writers.push_back([&f](std::ostream& s) { s << f.text; });
  out.write(writers);
}

void add_run_commands(CLI::App& app) {
  app.add_subcommand("variants", "the variants this build knows, with their contracts")->callback(list_variants);
  {
    auto o = std::make_shared<run_options>();
    CLI::App* cmd = app.add_subcommand("run", "every case of a suite against every variant, with expectations");
    add_run_flags(*cmd, o->run);
    CLI::Option* out = cmd->add_option("--out", o->out, "folder for " + reports::report_file_list(true) +
                                                            " (an existing folder, or a new one in an existing folder)");
    cmd->add_option("--shard", o->shard, "run only shard I of N (e.g. 2/3): a fixed part of the (case, variant) "
                                         "pairs; `mqacheck merge` puts the N reports together");
    cmd->callback([o, out] {
      o->out_given = out->count() > 0;
      exit_status() = run_command(*o);
    });
  }
}

}  // namespace mqa::cli
