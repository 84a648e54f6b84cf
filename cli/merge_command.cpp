// `mqacheck merge SHARD.json ... --out DIR`: shard reports into the report of the whole run
// (validator/verdict/merge.hpp), with the same files as `run --out`. Exit 0 when every expectation holds
// over all shards, 1 when not, 2 bad input (nothing written).
#include <fmt/core.h>

#include <memory>

#include "commands.hpp"
#include "report_inputs.hpp"
#include "reports/escape.hpp"
#include "reports/formats.hpp"
#include "run_command.hpp"
#include "validator/io/output_set.hpp"
#include "validator/verdict/merge.hpp"

namespace mqa::cli {
namespace {

struct merge_options {
  std::vector<std::string> shards;
  std::string out;
};

int merge_command(const merge_options& o) {
  std::vector<report_input> inputs;
  for (const auto& s : o.shards) inputs.push_back(read_report_input(s));
  const std::vector<std::string> names = reports::report_file_names();
  io::output_set out("--out", o.out, names);
  refuse_overwriting("--out", o.out, names, inputs);
  std::vector<verdict::named_report> shards;
  for (const auto& in : inputs) shards.push_back({in.name, &in.report});
  const nlohmann::json merged = verdict::merge_shards(shards);
  write_files(out, reports::report_files(merged));
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
  cmd->add_option("SHARDS", o->shards, "each shard's report.json (or its --out folder)")->required();
  cmd->add_option("--out", o->out, "folder for " + reports::report_file_list(false))->required();
  cmd->callback([o] { exit_status() = merge_command(*o); });
}

}  // namespace mqa::cli
