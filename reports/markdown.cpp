#include "markdown.hpp"

#include <fmt/core.h>

#include "fields.hpp"

namespace mqa::reports {
namespace {

}  // namespace

std::string markdown(const nlohmann::json& report) {
  const nlohmann::json& shard = report.at("shard");
  const std::string part =
      shard.is_object() ? fmt::format(" shard {}/{}", shard.at("index").get<int>(), shard.at("count").get<int>()) : "";
  std::string md = fmt::format("## mqacheck: suite `{}`{} {}\n\n", report.at("suite").get<std::string>(), part,
                               report.at("expectations_hold").get<bool>() ? "- every expectation holds"
                                                                          : "- EXPECTATIONS BROKEN");
  bool listed = false;
  for (const auto& b : report.at("broken_expectations")) md += fmt::format("- **{}**\n", b.get<std::string>()), listed = true;
  for (const auto& s : report.at("skipped"))
    md += fmt::format("- skipped: {} on {}: {}\n", s.at("variant").get<std::string>(), s.at("case").get<std::string>(),
                      s.at("reason").get<std::string>()),
        listed = true;
  if (const auto k = report.find("kernel"); k != report.end() && k->is_object()) {
    const std::string label = k->at("label").is_string() ? k->at("label").get<std::string>() : "kernel";
    md += fmt::format("- kernel `{}`: `{}` under {}", markdown_cell(label),
                      markdown_cell(k->at("command").get<std::string>()), k->at("contract").get<std::string>());
    if (const auto starts = k->find("adapter_starts"); starts != k->end() && starts->is_number_integer())
      md += fmt::format("; adapter started {} time(s)", starts->get<int>());
    md += "\n", listed = true;
  }
  if (shard.is_object())
    md += "- one shard of the suite: mutant coverage is judged when the shards are merged (`mqacheck merge`)\n",
        listed = true;
  if (listed) md += "\n";
  md += "| case | variant | outcome | max ULP | p99 ULP | max err/bound | top-k recall | findings |\n";
  md += "|---|---|---|---:|---:|---:|---:|---|\n";
  for (const auto& r : report.at("results")) {
    const nlohmann::json& m = r.at("metrics");
    const nlohmann::json none;
    const nlohmann::json& ulp = m.is_object() ? m.at("ulp") : none;
    auto at = [&](const nlohmann::json& o, const char* name) -> const nlohmann::json& {
      return o.is_object() ? o.at(name) : none;
    };
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", markdown_cell(r.at("case").get<std::string>()),
                      markdown_cell(r.at("variant").get<std::string>()), r.at("outcome").get<std::string>(),
                      shown(at(ulp, "max")), shown(at(ulp, "p99")), shown(at(m, "max_error_over_bound")),
                      shown(at(m, "topk_recall"), 4), markdown_cell(findings_summary(r)));
  }
  if (!report.at("mutants").empty()) {
    md += "\n| mutant | bug class | must produce | caught by |\n|---|---|---|---|\n";
    for (const auto& m : report.at("mutants")) {
      std::string must, by;
      for (const auto& s : m.at("must_produce")) must += (must.empty() ? "" : " or ") + s.get<std::string>();
      for (const auto& s : m.at("caught_by")) by += (by.empty() ? "" : ", ") + s.get<std::string>();
      if (by.empty() && !mutant_ran(report, m)) by = "not exercised: skipped on every case";
      if (by.empty()) by = shard.is_object() ? "nothing in this shard" : "**nothing**";
      md += fmt::format("| {} | {} | {} | {} |\n", markdown_cell(m.at("variant").get<std::string>()),
                        markdown_cell(m.at("bug_class").get<std::string>()), must, by);
    }
  }
  return md;
}

}  // namespace mqa::reports
