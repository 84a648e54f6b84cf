// `mqacheck certify --cases FILE (run's options) --baseline REPORT --out DIR`: runs the
// suite as `run` does, diffs the result against the baseline (validator/verdict/diff.hpp) and writes the
// certificate (reports/certificate.hpp) with the run's reports. Exit 0 certified, 1 not, 2 bad input.
#include <fmt/core.h>

#include <array>
#include <memory>
#include <set>

#include "commands.hpp"
#include "machine.hpp"
#include "report_inputs.hpp"
#include "reports/certificate.hpp"
#include "reports/diff_text.hpp"
#include "reports/escape.hpp"
#include "reports/formats.hpp"
#include "reports/report.hpp"
#include "run_command.hpp"
#include "run_devices.hpp"
#include "validator/activity.hpp"
#include "validator/case/load.hpp"
#include "validator/input_error.hpp"
#include "validator/io/output_set.hpp"
#include "validator/io/json_text.hpp"
#include "validator/verdict/diff.hpp"
#include "validator/verdict/report_commit.hpp"
#include "validator/verdict/scheduler_shard.hpp"

namespace mqa::cli {
namespace {

struct certify_options {
  run_flags run;
  std::string baseline, out;
  std::optional<double> max_slowdown;
  bool accept_weaker_contract = false;
  bool accept_dirty_baseline = false;
  std::string devices;  // --devices, as run's
  std::string balance_by;  // --balance-by, as run's
};

// certify's command line as `run`'s, for run --devices' workers: certify's own options left out.
std::vector<std::string> as_run_command_line(std::vector<std::string> arguments) {
  static const std::set<std::string> kWithValue{"--baseline", "--max-slowdown"};
  static const std::set<std::string> kFlags{"--accept-weaker-contract", "--accept-dirty-baseline"};
  std::vector<std::string> out;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const std::string& a = arguments[i];
    const std::string name = a.substr(0, a.find('='));
    if (kWithValue.count(a)) ++i;
    else if (!kFlags.count(a) && !(name != a && kWithValue.count(name)))
      out.push_back(i == 1 && a == "certify" ? "run" : a);
  }
  return out;
}

int certify_command(const certify_options& o) {
  // Everything that can be wrong is found before the run.
  const cases::suite s = load_selected_suite(o.run);
  check_run_flags(s, o.run);
  const report_input baseline = read_report_input(o.baseline);
  if (baseline.report.at("suite") != s.name)
    throw input_error(fmt::format("--baseline {}: a report of suite '{}', and {} is suite '{}': certify compares two runs "
                                  "of one suite",
                                  o.baseline, baseline.report.at("suite").get<std::string>(), o.run.cases_file, s.name));
  if (baseline.report.at("shard").is_object())
    throw input_error(fmt::format("--baseline {}: the report of one shard only: put the shards together first (mqacheck "
                                  "merge)",
                                  o.baseline));
  // A certificate vouches against its baseline: one made by code nobody can check out again vouches
  // for nothing anyone can reproduce.
  if (const auto why = verdict::unreproducible_build(baseline.report); why && !o.accept_dirty_baseline)
    throw input_error(fmt::format("--baseline {}: {}: make the baseline again from a clean checkout "
                                  "(reports/baselines/README.md), or pass --accept-dirty-baseline (the certificate "
                                  "records it)",
                                  o.baseline, *why));
  if (o.max_slowdown && !(*o.max_slowdown >= 1))
    throw input_error(fmt::format("--max-slowdown {}: expected a factor of at least 1", *o.max_slowdown));
  std::vector<std::string> names = reports::report_file_names();
  names.push_back("certificate.md");
  names.push_back("certificate.json");
  const std::array<io::named_input, 1> suite{{{"--cases", o.run.cases_file}}};
  io::output_set out("--out", o.out, names, suite);
  refuse_overwriting("--out", o.out, names, {baseline});

  std::vector<device_worker> devices;
  if (!o.devices.empty()) devices = parse_devices("--devices", o.devices, verdict::process_environment);
  const nlohmann::json timed = o.balance_by.empty() ? nlohmann::json() : read_balance_report(o.balance_by, s);

  const activity::scope doing(fmt::format("certify {}", o.run.cases_file));
  nlohmann::json report;
  if (devices.empty()) {
    const verdict::suite_report r = run_selected(s, o.run);
    print_results(r);
    report = reports::suite_json(r);
  } else {
    // The certificate judges the merged run, not the workers' exit statuses.
    report = run_on_devices(s, o.run, devices, as_run_command_line(command_line()),
                            o.balance_by.empty() ? nullptr : &timed)
                 .report;
  }
  const verdict::report_diff d =
      verdict::diff_reports({baseline.name, &baseline.report}, {out.shown(verdict::kReportFile), &report},
                          {.max_slowdown = o.max_slowdown, .accept_weaker_contract = o.accept_weaker_contract});
  const nlohmann::json certificate = reports::certificate_json(
      {&report, &d, this_machine(), utc_now(),
       o.accept_dirty_baseline ? verdict::unreproducible_build(baseline.report) : std::nullopt});
  std::vector<reports::report_file> files = reports::report_files(report);
  files.push_back({"certificate.md", reports::certificate_markdown(certificate, d)});
  files.push_back({"certificate.json", io::json_text(certificate, 2) + "\n"});
  fmt::print("\n{}", reports::diff_table(d));
  write_files(out, files);
  const bool certified = certificate.at("certified").get<bool>();
  fmt::print("\n{}: {}\n", certified ? "CERTIFIED" : "NOT CERTIFIED", out.shown("certificate.md"));
  for (const auto& why : certificate.at("reasons")) fmt::print("  - {}\n", reports::terminal_text(why.get<std::string>()));
  for (const auto& f : certificate.at("failures"))
    fmt::print("  case '{}', {}: {}\n", reports::terminal_text(f.at("case").get<std::string>()),
               reports::terminal_text(f.at("variant").get<std::string>()),
               reports::terminal_text(f.at("first_finding").get<std::string>()));
  if (certificate.at("accepted_dirty_baseline").is_string())
    fmt::print("  accepted (--accept-dirty-baseline): the baseline was {}\n",
               certificate.at("accepted_dirty_baseline").get<std::string>());
  for (const auto& a : certificate.at("accepted_weaker_contract"))
    fmt::print("  accepted (--accept-weaker-contract): {}\n", reports::terminal_text(a.get<std::string>()));
  return certified ? 0 : 1;
}

}  // namespace

void add_certify_command(CLI::App& app) {
  auto o = std::make_shared<certify_options>();
  CLI::App* cmd = app.add_subcommand("certify", "run a suite, diff it against a baseline report and write a "
                                                "certificate (certificate.md, certificate.json) with the run's reports");
  add_run_flags(*cmd, o->run);
  cmd->add_option("--baseline", o->baseline, "report.json of the run to compare with (reports/baselines/)")->required();
  cmd->add_option("--out", o->out, "folder for the certificate and the run's reports")->required();
  cmd->add_option("--max-slowdown", o->max_slowdown,
                  "not certified when a pair's kernel time grows by more than this factor (default: report only)");
  cmd->add_flag("--accept-weaker-contract", o->accept_weaker_contract,
                "certify although the contract is weaker than the baseline's (contract-weakened); the certificate "
                "records it");
  cmd->add_flag("--accept-dirty-baseline", o->accept_dirty_baseline,
                "use a baseline made by an mqacheck built from uncommitted changes or of unknown commit (refused "
                "otherwise); the certificate records it");
  cmd->add_option("--devices", o->devices,
                  "as run's --devices: one worker per device (all, 0,1,..., or cpu:N), the cases split by estimated "
                  "cost, the workers' reports merged before the diff");
  cmd->add_option("--balance-by", o->balance_by,
                  "as run's --balance-by: an earlier report whose timings weigh the cases (the baseline's, say)")
      ->needs("--devices");
  cmd->callback([o] { exit_status() = certify_command(*o); });
}

}  // namespace mqa::cli
