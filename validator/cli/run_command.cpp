// `mqacheck run` and `mqacheck variants`: suites against the variants this build knows.
#include <fmt/core.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "commands.hpp"
#include "kernels/registry.hpp"
#include "reference_engine.hpp"
#include "reports/report.hpp"
#include "validator/case/load.hpp"
#include "validator/input_error.hpp"
#include "validator/verdict/verdict.hpp"

namespace mqa::cli {
namespace {

namespace fs = std::filesystem;

std::string contract_line(const kernels::variant& v) { return kernels::describe(v.declared); }

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
  std::string cases_file;
  std::vector<std::string> variants;
  std::string out;
  unsigned threads = 0;
};

int run_command(const run_options& o) {
  const cases::suite s = cases::load_suite(o.cases_file);
  if (!o.out.empty()) {
    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (ec) throw input_error(fmt::format("{}: cannot create the report folder ({})", o.out, ec.message()));
  }
  verdict::run_options ro;
  ro.variants = o.variants;
  ro.threads = o.threads;
  ro.progress = show_progress;
  ro.reference = exact_reference;
  const verdict::suite_report r = verdict::run_suite(s, ro);

  std::size_t case_width = 4, variant_width = 7;
  for (const auto& c : r.results) {
    case_width = std::max(case_width, c.case_name.size());
    variant_width = std::max(variant_width, c.variant.size());
  }
  fmt::print("{:<{}}  {:<{}}  {:<7}  {:>10}  {:>8}  {:>9}  {:>6}  {:>9}  {}\n", "case", case_width, "variant",
             variant_width, "verdict", "max ULP", "p99 ULP", "err/bound", "recall", "time", "findings");
  for (const auto& c : r.results) {
    const compare::metrics& m = c.judgement.stats;
    fmt::print("{:<{}}  {:<{}}  {:<7}  {:>10}  {:>8}  {:>9.3g}  {:>6.4f}  {:>7.2f}ms  {}\n", c.case_name, case_width,
               c.variant, variant_width, c.outcome(), m.ulps.max, m.ulps.percentile(0.99), m.max_error_over_bound,
               m.topk_recall, c.kernel_seconds * 1e3, reports::summary(c.judgement));
  }
  for (const auto& s : r.skipped) fmt::print("skipped: {}\n", s);
  fmt::print("\n{:<{}}  {:>9}  {:>9}  {:>9}\n", "case", case_width, "inputs", "reference", "total");
  for (const auto& t : r.timings)
    fmt::print("{:<{}}  {:>8.2f}s  {:>8.2f}s  {:>8.2f}s\n", t.case_name, case_width, t.inputs_seconds,
               t.reference_seconds, t.total_seconds);
  const auto broken = r.broken_expectations();
  std::size_t caught = 0;
  for (const auto& m : r.mutants) caught += !m.caught_by.empty();
  fmt::print("\nsuite '{}': {} results in {:.1f} s; mutants caught {}/{}; {}\n", r.suite_name, r.results.size(),
             r.seconds, caught, r.mutants.size(), broken.empty() ? "every expectation holds" : "EXPECTATIONS BROKEN:");
  for (const auto& b : broken) fmt::print("  - {}\n", b);
  if (!o.out.empty()) {
    const fs::path dir = o.out;
    reports::write_file(dir / "report.json", reports::suite_json(r).dump(2) + "\n");
    reports::write_file(dir / "report.xml", reports::junit_xml(r));
    reports::write_file(dir / "summary.md", reports::markdown(r));
    fmt::print("reports: {}, report.xml, summary.md\n", (dir / "report.json").lexically_normal().string());
  }
  return broken.empty() ? 0 : 1;
}

}  // namespace

void add_run_commands(CLI::App& app) {
  app.add_subcommand("variants", "the variants this build knows, with their contracts")->callback(list_variants);
  {
    auto o = std::make_shared<run_options>();
    CLI::App* cmd = app.add_subcommand("run", "every case of a suite against every variant, with expectations");
    cmd->add_option("--cases", o->cases_file, "suite file (TOML)")->required();
    cmd->add_option("--variant", o->variants, "variants to run (repeatable; default: all, see `mqacheck variants`)");
    cmd->add_option("--out", o->out, "folder for report.json, report.xml (JUnit) and summary.md");
    cmd->add_option("--threads", o->threads, "worker threads (default: all cores)");
    cmd->callback([o] { exit_status() = run_command(*o); });
  }
}

}  // namespace mqa::cli
