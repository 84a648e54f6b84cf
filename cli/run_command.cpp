// `mqacheck run` and `mqacheck variants`: suites against the variants this build knows.
#include "run_command.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <memory>
#include <string>

#include "commands.hpp"
#include "run_devices.hpp"
#include "kernels/registry/registry.hpp"
#include "api/reference_engine.hpp"
#include "api/suite_run.hpp"
#include "reports/escape.hpp"
#include "reports/formats.hpp"
#include "reports/report.hpp"
#include "validator/activity.hpp"
#include "validator/case/load.hpp"
#include "validator/input_error.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/io/output_set.hpp"
#include "validator/verdict/merge.hpp"
#include "validator/verdict/scheduler_shard.hpp"
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
  terminal_flags shown;
  std::string out;
  bool out_given = false;  // `--out ''` is an error, not "no reports"
  std::string shard;
  std::string devices;       // --devices: one worker per device, the reports merged
  std::string balance_by;    // --balance-by: an earlier report whose timings weigh the cases
  std::string worker_pairs;  // a worker's own pairs, from the parent's --devices
};

// `run --devices`: the workers' merged report, its files, one summary line.
int run_on_devices_command(const cases::suite& s, const run_options& o, io::output_set* reports) {
  const std::vector<device_worker> devices = parse_devices("--devices", o.devices, verdict::process_environment);
  const nlohmann::json timed = o.balance_by.empty() ? nlohmann::json() : read_balance_report(o.balance_by, s);
  const devices_run run = run_on_devices(s, o.run, devices, command_line(), o.balance_by.empty() ? nullptr : &timed);
  const nlohmann::json& merged = run.report;
  const bool holds = merged.at("expectations_hold").get<bool>();
  std::size_t caught = 0;
  for (const auto& m : merged.at("mutants")) caught += !m.at("caught_by").empty();
  fmt::print("\nsuite '{}' on {} workers: {} results, {} skipped; mutants caught {}/{}; {}\n",
             reports::terminal_text(merged.at("suite").get<std::string>()), run.workers, merged.at("results").size(),
             merged.at("skipped").size(), caught, merged.at("mutants").size(),
             holds ? "every expectation holds" : "EXPECTATIONS BROKEN:");
  for (const auto& b : merged.at("broken_expectations"))
    fmt::print("  - {}\n", reports::terminal_text(b.get<std::string>()));
  if (reports) {
    reports::write_report_files(*reports, merged);
    fmt::print("reports: {}\n", reports::written_report_files(*reports));
  }
  // As a run on one machine: not one case judged (every pair skipped) is 2.
  return std::max(run.status, verdict::every_pair_skipped(merged) ? 2 : holds ? 0 : 1);
}

int run_command(const run_options& o) {
  const cases::suite s = load_selected_suite(o.run);
  // Every argument is checked before the first case runs; --out is created only at the end.
  check_run_flags(s, o.run);
  std::optional<verdict::shard> shard;
  if (!o.shard.empty()) shard = verdict::shard_of_option("--shard", o.shard, verdict::process_environment);
  if (!o.worker_pairs.empty()) shard = read_worker_pairs(o.worker_pairs);
  if (!o.devices.empty() && shard)
    throw input_error("--devices and --shard: a run is split over devices or is one shard, not both; run each shard "
                      "without --devices, or the whole suite with it");
  if (!o.devices.empty())
    // The workers' tables and timings go to their logs, and the merged run prints one summary
    // line: these options would change nothing the user sees.
    for (const auto& [given, name] : {std::pair{o.shown.brief, "--brief"}, std::pair{o.shown.verbose, "--verbose"},
                                      std::pair{o.shown.timing, "--timing"}})
      if (given)
        throw input_error(fmt::format("{} with --devices: a run over devices prints one summary line, not the "
                                      "result table; run without --devices for {}, or read the reports --out writes",
                                      name, name));
  if (shard && shard->source)
    fmt::print("shard {} (from {})\n", shard->to_string(), reports::terminal_text(verdict::describe(*shard->source)));
  std::unique_ptr<io::output_set> reports;
  const std::array<io::named_input, 1> suite{{{"--cases", o.run.cases_file}}};
  if (o.out_given) reports = std::make_unique<io::output_set>("--out", o.out, reports::report_file_names(), suite);
  const activity::scope doing(fmt::format("run {}", o.run.cases_file));
  if (!o.devices.empty()) return run_on_devices_command(s, o, reports.get());
  const verdict::suite_report r = run_selected(s, o.run, shard);
  print_results(r, o.shown);
  if (reports) {
    reports::write_report_files(*reports, reports::suite_json(r));
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
  cmd.add_flag("--diagnose-mutants", f.diagnose_mutants,
               "diagnose the built-in mutants' findings too (their planted bug is known and coverage is judged by "
               "finding class, so by default they are not)");
  add_kernel_flags(cmd, f.kernel, variant);
}

cases::suite load_selected_suite(const run_flags& f) { return api::selected_suite(f.cases_file, f.case_names); }

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
  ro.engines = api::reference_engines();
  ro.diagnose = f.diagnose;
  ro.diagnose_mutants = f.diagnose_mutants;
  if (!f.kernel.command.empty()) return run_kernel(s, kernel_options_of(f.kernel), ro);
  return verdict::run_suite(s, ro);
}

void add_run_commands(CLI::App& app) {
  app.add_subcommand("variants", "the variants this build knows, with their contracts")->callback(list_variants);
  {
    auto o = std::make_shared<run_options>();
    CLI::App* cmd = app.add_subcommand("run", "every case of a suite against every variant, with expectations");
    add_run_flags(*cmd, o->run);
    cmd->add_flag("--verbose", o->shown.verbose, "list every skipped (case, variant) pair with its reason");
    cmd->add_flag("--brief", o->shown.brief,
                  "table rows only where an expectation broke (a correct variant with findings, a case not judged); "
                  "the reports hold every row");
    cmd->add_flag("--timing", o->shown.timing, "print where each case's time went, stage by stage");
    CLI::Option* out = cmd->add_option("--out", o->out, "folder for " + reports::report_file_list(true) +
                                                            " (an existing folder, or a new one in an existing folder)");
    cmd->add_option("--shard", o->shard,
                    "run only shard I of N (e.g. 2/3): a fixed part of the (case, variant) pairs; `mqacheck merge` "
                    "puts the N reports together. `auto` reads I and N from the scheduler's task variables (Slurm "
                    "job array, Buildkite parallelism, GitLab parallel); `auto/N` for a Kubernetes Indexed Job "
                    "(JOB_COMPLETION_INDEX, N = completions)");
    cmd->add_option("--devices", o->devices,
                    "one worker per device, the cases split by estimated cost (m*n*heads*head_dim), each worker with "
                    "CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES set to its device, the reports merged: `all` (the "
                    "host's GPUs; exit 2 where there is none), a list such as 0,1,3, or cpu:N (N workers on the CPU)");
    cmd->add_option("--balance-by", o->balance_by,
                    "with --devices: weigh the cases by their times in this report of an earlier run of the suite "
                    "(its report.json or --out folder) instead of m*n*heads*head_dim")
        ->needs("--devices");
    cmd->add_option(std::string(kWorkerPairsOption), o->worker_pairs)->group("");  // a --devices worker's pairs
    cmd->callback([o, out] {
      o->out_given = out->count() > 0;
      exit_status() = run_command(*o);
    });
  }
}

}  // namespace mqa::cli
