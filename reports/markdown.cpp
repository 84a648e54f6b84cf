#include "markdown.hpp"

#include <fmt/core.h>

#include "fields.hpp"

namespace mqa::reports {
namespace {

// Every string of report.json goes through markdown_text: labels, errors, case, suite and file
// names and the kernel command come from elsewhere, and the sentences mqacheck makes quote them.
// A report value as Markdown text.
std::string plain(const nlohmann::json& value) { return markdown_text(value.get<std::string>()); }

}  // namespace

std::string markdown(const nlohmann::json& report) {
  const nlohmann::json& shard = report.at("shard");
  const std::string part =
      shard.is_object() ? fmt::format(" shard {}/{}", shard.at("index").get<int>(), shard.at("count").get<int>()) : "";
  std::string md = fmt::format("## mqacheck: suite {}{} {}\n\n", plain(report.at("suite")), part,
                               report.at("expectations_hold").get<bool>() ? "- every expectation holds"
                                                                          : "- EXPECTATIONS BROKEN");
  bool listed = false;
  for (const auto& b : report.at("broken_expectations")) md += fmt::format("- **{}**\n", plain(b)), listed = true;
  for (const auto& s : report.at("skipped"))
    md += fmt::format("- skipped: {} on {}: {}\n", plain(s.at("variant")), plain(s.at("case")), plain(s.at("reason"))),
        listed = true;
  if (const auto k = report.find("kernel"); k != report.end() && k->is_object()) {
    const std::string label = k->at("label").is_string() ? k->at("label").get<std::string>() : "kernel";
    md += fmt::format("- kernel {}: {} under {}", markdown_text(label), plain(k->at("command")),
                      plain(k->at("contract")));
    if (const auto starts = k->find("adapter_starts"); starts != k->end() && starts->is_number_integer())
      md += fmt::format("; adapter started {} time(s)", starts->get<int>());
    md += "\n", listed = true;
  }
  for (const auto& r : report.at("results"))
    if (const auto s = r.find("suspicion"); s != r.end() && s->is_object())
      md += fmt::format("- **{} on {}: {}**\n", plain(r.at("variant")), plain(r.at("case")), plain(s->at("note"))),
          listed = true;
  if (shard.is_object())
    md += "- one shard of the suite: mutant coverage is judged when the shards are merged (`mqacheck merge`)\n",
        listed = true;
  if (listed) md += "\n";
  // The condition-free scales first (compare/ulp_scales.hpp): raw ULPs to an exact value that
  // cancelled say how the head sum cancelled, not how the kernel did; they follow.
  md += "| case | variant | outcome | p99 ULP of A | max ULP of A | p99 ULP, well conditioned | max err/bound | top-k "
        "recall | max ULP | p99 ULP | findings |\n";
  md += "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& r : report.at("results")) {
    const nlohmann::json& m = r.at("metrics");
    const nlohmann::json none;
    // Members an older report lacks read as none: "-".
    auto at = [&](const nlohmann::json& o, const char* name) -> const nlohmann::json& {
      if (!o.is_object()) return none;
      const auto found = o.find(name);
      return found == o.end() ? none : *found;
    };
    const nlohmann::json& ulp = at(m, "ulp");
    const nlohmann::json& magnitude = at(m, "magnitude_ulp");
    const nlohmann::json& conditioned = at(m, "conditioned_ulp");
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", plain(r.at("case")),
                      plain(r.at("variant")), plain(r.at("outcome")), shown(at(magnitude, "p99")),
                      shown(at(magnitude, "max")), shown(at(conditioned, "p99")), shown(at(m, "max_error_over_bound")),
                      shown(at(m, "topk_recall"), 4), shown(at(ulp, "max")), shown(at(ulp, "p99")),
                      markdown_text(findings_summary(r)));
  }
  if (!report.at("mutants").empty()) {
    md += "\n| mutant | bug class | must produce | caught by |\n|---|---|---|---|\n";
    for (const auto& m : report.at("mutants")) {
      std::string must, by;
      for (const auto& s : m.at("must_produce")) must += (must.empty() ? "" : " or ") + plain(s);
      for (const auto& s : m.at("caught_by")) by += (by.empty() ? "" : ", ") + plain(s);
      if (by.empty() && !mutant_ran(report, m)) by = "not exercised: skipped on every case";
      if (by.empty()) by = shard.is_object() ? "nothing in this shard" : "**nothing**";
      md += fmt::format("| {} | {} | {} | {} |\n", plain(m.at("variant")), plain(m.at("bug_class")), must, by);
    }
  }
  return md;
}

}  // namespace mqa::reports
