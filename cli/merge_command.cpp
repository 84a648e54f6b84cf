// `mqacheck merge SHARD.json ... --out DIR`: shard reports into the report of the whole run
// (validator/verdict/merge.hpp), with the same files as `run --out`. Exit 0 when every expectation holds
// over all shards, 1 when not, 2 bad input (nothing written). A folder that is no shard's --out
// folder is a folder of shards, as a scheduler's tasks leave them: each subfolder holding a
// report.json, and each .json file in it.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "commands.hpp"
#include "report_inputs.hpp"
#include "reports/escape.hpp"
#include "reports/formats.hpp"
#include "run_command.hpp"
#include "validator/input_error.hpp"
#include "validator/io/output_set.hpp"
#include "validator/verdict/merge.hpp"
#include "validator/verdict/report_document.hpp"

namespace mqa::cli {
namespace {

struct merge_options {
  std::vector<std::string> shards;
  std::string out;
};

namespace fs = std::filesystem;

// The reports a SHARDS argument names: itself (a report.json, or a folder holding one), or the
// shards' reports inside a folder of shards, in name order; input_error for a folder with none.
std::vector<std::string> shard_reports_in(const std::string& given) {
  std::error_code ec;
  if (!fs::is_directory(given, ec) || fs::exists(fs::path(given) / verdict::kReportFile, ec)) return {given};
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(given, ec)) {
    const fs::path p = entry.path();
    if (entry.is_directory(ec) && fs::exists(p / verdict::kReportFile, ec)) found.push_back((p / verdict::kReportFile).string());
    else if (entry.is_regular_file(ec) && p.extension() == ".json") found.push_back(p.string());
  }
  if (ec) throw input_error(fmt::format("{}: cannot list the folder: {}", given, ec.message()));
  if (found.empty())
    throw input_error(fmt::format("{}: a folder with no shard reports: expected {} in it, or subfolders holding one "
                                  "(each shard's --out)",
                                  given, verdict::kReportFile));
  std::sort(found.begin(), found.end());
  return found;
}

int merge_command(const merge_options& o) {
  std::vector<report_input> inputs;
  for (const auto& given : o.shards)
    for (const auto& s : shard_reports_in(given)) inputs.push_back(read_report_input(s));
  const std::vector<std::string> names = reports::report_file_names();
  io::output_set out("--out", o.out, names);
  refuse_overwriting("--out", o.out, names, inputs);
  std::vector<verdict::named_report> shards;
  for (const auto& in : inputs) shards.push_back({in.name, &in.report});
  const nlohmann::json merged = verdict::merge_shards(shards);
  reports::write_report_files(out, merged);
  const bool holds = merged.at("expectations_hold").get<bool>();
  std::size_t caught = 0;
  for (const auto& m : merged.at("mutants")) caught += !m.at("caught_by").empty();
  fmt::print("suite '{}': {} shards, {} results, {} skipped; mutants caught {}/{}; {}\n",
             reports::terminal_text(merged.at("suite").get<std::string>()), inputs.size(), merged.at("results").size(),
             merged.at("skipped").size(), caught, merged.at("mutants").size(),
             holds ? "every expectation holds" : "EXPECTATIONS BROKEN:");
  for (const auto& b : merged.at("broken_expectations"))
    fmt::print("  - {}\n", reports::terminal_text(b.get<std::string>()));
  fmt::print("reports: {}\n", reports::written_report_files(out));
  return holds ? 0 : 1;
}

}  // namespace

void add_merge_command(CLI::App& app) {
  auto o = std::make_shared<merge_options>();
  CLI::App* cmd = app.add_subcommand("merge", "the reports of `run --shard I/N`, every shard once, into the report "
                                              "of the whole run");
  cmd->add_option("SHARDS", o->shards,
                  "each shard's report.json (or its --out folder), or a folder of shards: its subfolders holding a "
                  "report.json and its .json files (as a scheduler's tasks leave them)")
      ->required();
  cmd->add_option("--out", o->out, "folder for " + reports::report_file_list(false))->required();
  cmd->callback([o] { exit_status() = merge_command(*o); });
}

}  // namespace mqa::cli
