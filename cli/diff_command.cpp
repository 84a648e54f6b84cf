// `mqacheck diff BASELINE NEW`: what changed between two reports of one suite (validator/verdict/diff.hpp).
// Exit 0 nothing regressed, 1 something did, 2 bad input.
#include <fmt/core.h>

#include <array>
#include <filesystem>
#include <optional>

#include "commands.hpp"
#include "report_inputs.hpp"
#include "reports/diff_text.hpp"
#include "validator/input_error.hpp"
#include "validator/io/atomic_file.hpp"
#include "validator/io/json_text.hpp"
#include "validator/verdict/diff.hpp"
#include "validator/verdict/report_commit.hpp"

namespace mqa::cli {
namespace {

struct diff_options {
  std::string baseline, now, json, markdown;
  std::optional<double> max_slowdown;
  bool accept_weaker_contract = false;
  std::optional<double> max_drift;
};

int diff_command(const diff_options& o) {
  const report_input baseline = read_report_input(o.baseline), now = read_report_input(o.now);
  if (o.max_slowdown && !(*o.max_slowdown >= 1))
    throw input_error(fmt::format("--max-slowdown {}: expected a factor of at least 1 (1.2: fail when a kernel is more "
                                  "than 20% slower)",
                                  *o.max_slowdown));
  if (o.max_drift && !(*o.max_drift >= 1))
    throw input_error(fmt::format("--max-drift {}: expected a factor of at least 1 (1.5: fail when the error in ULPs "
                                  "of the magnitude grows by more than half)",
                                  *o.max_drift));
  const std::array<io::named_input, 2> inputs{io::named_input{"BASELINE", baseline.path},
                                              io::named_input{"NEW", now.path}};
  // Outputs are checked before the work: never a table printed and then "cannot write".
  std::string json, markdown;
  std::vector<io::pending_file> outputs;
  if (!o.json.empty()) outputs.push_back({io::resolve_output_file("--json", o.json, inputs), [&](std::ostream& s) { s << json; }});
  if (!o.markdown.empty())
    outputs.push_back({io::resolve_output_file("--markdown", o.markdown, inputs), [&](std::ostream& s) { s << markdown; }});
  std::error_code ec;
  if (outputs.size() == 2 && std::filesystem::weakly_canonical(outputs[0].file.target, ec) ==
                               std::filesystem::weakly_canonical(outputs[1].file.target, ec))
    throw input_error(fmt::format("--json and --markdown are the same file ({}): give two paths", o.json));
  const verdict::report_diff d =
      verdict::diff_reports({baseline.name, &baseline.report}, {now.name, &now.report},
                            {.max_slowdown = o.max_slowdown,
                             .accept_weaker_contract = o.accept_weaker_contract,
                             .max_drift = o.max_drift});
  json = io::json_text(reports::diff_json(d), 2) + "\n";
  markdown = reports::diff_markdown(d);
  // One line each: a report made by code nobody can check out again still diffs, but says so.
  for (const auto* input : {&baseline, &now})
    if (const auto why = verdict::unreproducible_build(input->report))
      fmt::print(stderr, "mqacheck diff: warning: {} was {}\n", input->name, *why);
  fmt::print("{}", reports::diff_table(d));
  io::write_together(outputs);
  return d.regressed() ? 1 : 0;
}

}  // namespace

void add_diff_command(CLI::App& app) {
  auto o = std::make_shared<diff_options>();
  CLI::App* cmd = app.add_subcommand("diff", "what changed between two reports of one suite: exit 1 when something "
                                             "regressed (reports/README.md)");
  cmd->add_option("BASELINE", o->baseline, "report.json of the baseline run (or its --out folder)")->required();
  cmd->add_option("NEW", o->now, "report.json of the new run (or its --out folder)")->required();
  cmd->add_option("--json", o->json, "write the diff as JSON (schema mqacheck.diff)");
  cmd->add_option("--markdown", o->markdown, "write the diff as Markdown, for a pull-request comment");
  cmd->add_option("--max-slowdown", o->max_slowdown,
                  "regress when a pair's kernel time grows by more than this factor (default: report only)");
  cmd->add_flag("--accept-weaker-contract", o->accept_weaker_contract,
                "a contract weaker than the baseline's (contract-weakened) is listed as accepted, not a regression");
  cmd->add_option("--max-drift", o->max_drift,
                  "regress when a pair's error in ULPs of the magnitude (p99 or max) grows by more than this factor "
                  "(default: off)");
  cmd->callback([o] { exit_status() = diff_command(*o); });
}

}  // namespace mqa::cli
