#include "markdown.hpp"

#include <fmt/core.h>

#include <map>
#include <utility>

#include "fields.hpp"

namespace mqa::reports {
namespace {

// Every string of report.json goes through markdown_text: labels, errors, case, suite and file
// names and the kernel command come from elsewhere, and the sentences mqacheck makes quote them.
// A report value as Markdown text.
std::string plain(const nlohmann::json& value) { return markdown_text(value.get<std::string>()); }


// The matrix's marks: a reader of a plain-text summary sees no colour.
std::string cell_mark(std::string_view standing_now, const std::string& value) {
  if (standing_now == "broken") return fmt::format("**✗ {}**", value);
  if (standing_now == "caught") return "✓ " + value;
  if (standing_now == "silent") return "· " + value;
  if (standing_now == "other") return "~ " + value;
  return value;
}

// Rows are variants, columns cases (a suite has more variants than cases), each cell the result's
// max error/bound marked with its standing (fields.hpp).
std::string matrix_markdown(const nlohmann::json& report) {
  const auto cases = case_order(report);
  using pair_key = std::pair<std::string, std::string>;  // case, variant
  std::map<pair_key, std::string> cell;
  for (const auto& s : report.at("skipped"))
    cell[{s.at("case").get<std::string>(), s.at("variant").get<std::string>()}] = "skip";
  for (const auto& r : report.at("results")) {
    const auto& m = r.at("metrics");
    const std::string value = m.is_object() ? shown(m.at("max_error_over_bound"), 2) : plain(r.at("outcome"));
    cell[{r.at("case").get<std::string>(), r.at("variant").get<std::string>()}] = cell_mark(standing(report, r), value);
  }
  std::string md = "**Case x variant: max error/bound**\n\n| variant |";
  for (const auto& c : cases) md += fmt::format(" {} |", markdown_text(c));
  md += "\n|---|";
  for (std::size_t c = 0; c < cases.size(); ++c) md += "---:|";
  md += "\n";
  for (const auto& variant : variant_order(report)) {
    md += fmt::format("| {} |", markdown_text(variant));
    for (const auto& c : cases)
      if (const auto found = cell.find({c, variant}); found != cell.end())
        md += fmt::format(" {} |", found->second);
      else
        md += "  |";
    md += "\n";
  }
  return md + "\n✓ a mutant caught; · a mutant silent on this case and ~ one with findings of other classes, as expected "
              "while another case catches it; **✗** breaks an expectation; skip: the variant does not take the case (listed below).\n\n";
}

// The condition-free scales of docs/contracts.md, per correct variant, each the worst case's.
std::string headline_markdown(const nlohmann::json& report) {
  const auto rows = headlines(report);
  if (rows.empty()) return "";
  std::string md =
      "**Headline measures of the correct variants** (the worst case of each: the largest percentile, maximum and "
      "error/bound, the smallest well-conditioned share)\n\n"
      "| variant | cases | ULPs of A p50 | p99 | p99.9 | max | well conditioned share | their ULP p99 | max | max "
      "err/bound | on case |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& h : rows)
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", markdown_text(h.variant), h.cases,
                      shown_measure(h.magnitude_p50), shown_measure(h.magnitude_p99), shown_measure(h.magnitude_p999),
                      shown_measure(h.magnitude_max), shown_measure(h.conditioned_share),
                      shown_measure(h.conditioned_p99), shown_measure(h.conditioned_max),
                      shown_measure(h.error_over_bound, 2), markdown_text(h.worst_case));
  return md + "\n";
}

// GitHub renders a <details> element folded; Markdown inside it needs the blank lines.
std::string folded(const std::string& summary, const std::string& body) {
  return fmt::format("<details><summary>{}</summary>\n\n{}\n</details>\n\n", summary, body);
}

std::string skipped_list(const nlohmann::json& report) {
  const auto& skipped = report.at("skipped");
  if (skipped.empty()) return "";
  std::string list;
  for (const auto& s : skipped)
    list += fmt::format("- {} on {}: {}\n", plain(s.at("variant")), plain(s.at("case")), plain(s.at("reason")));
  return folded(counted(skipped.size(), "pair") + " skipped", list);
}

std::string mutants_table(const nlohmann::json& report) {
  if (report.at("mutants").empty()) return "";
  const bool shard = report.at("shard").is_object();
  std::string md = "**Mutants**: each must be caught on some case\n\n| mutant | bug class | must produce | caught by |\n"
                   "|---|---|---|---|\n";
  for (const auto& m : report.at("mutants")) {
    std::string must, by;
    for (const auto& s : m.at("must_produce")) must += (must.empty() ? "" : " or ") + plain(s);
    for (const auto& s : m.at("caught_by")) by += (by.empty() ? "" : ", ") + plain(s);
    if (by.empty() && !mutant_ran(report, m)) by = "not exercised: skipped on every case";
    if (by.empty()) by = shard ? "nothing in this shard" : "**nothing**";
    md += fmt::format("| {} | {} | {} | {} |\n", plain(m.at("variant")), plain(m.at("bug_class")), must, by);
  }
  return md + "\n";
}

// Members an older report lacks read as none: "-".
const nlohmann::json& member_or_none(const nlohmann::json& object, const char* name) {
  static const nlohmann::json none;
  if (!object.is_object()) return none;
  const auto found = object.find(name);
  return found == object.end() ? none : *found;
}

// Every result with its findings, folded: the matrix above says where to look. The results of a
// kernel under test (`run --kernel`) are that kernel case by case, and stay open.
std::string results_table(const nlohmann::json& report) {
  // The condition-free scales first (compare/ulp_scales.hpp): raw ULPs to an exact value that
  // cancelled say how the head sum cancelled, not how the kernel did; they follow.
  std::string md = "| case | variant | outcome | p99 ULP of A | max ULP of A | p99 ULP, well conditioned | max err/bound | "
                   "top-k recall | top-k decidedness | max ULP | p99 ULP | findings |\n";
  md += "|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|\n";
  for (const auto& r : report.at("results")) {
    const nlohmann::json& m = r.at("metrics");
    const nlohmann::json& ulp = member_or_none(m, "ulp");
    const nlohmann::json& magnitude = member_or_none(m, "magnitude_ulp");
    const nlohmann::json& conditioned = member_or_none(m, "conditioned_ulp");
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", plain(r.at("case")),
                      plain(r.at("variant")), plain(r.at("outcome")), shown(member_or_none(magnitude, "p99")),
                      shown(member_or_none(magnitude, "max")), shown(member_or_none(conditioned, "p99")),
                      shown(member_or_none(m, "max_error_over_bound")), shown(member_or_none(m, "topk_recall"), 4),
                      markdown_text(decidedness_text(m)), shown(member_or_none(ulp, "max")),
                      shown(member_or_none(ulp, "p99")),
                      markdown_text(findings_summary(r)));
  }
  if (const auto k = report.find("kernel"); k != report.end() && k->is_object())
    return "**The kernel, case by case**\n\n" + md + "\n";
  return folded(fmt::format("Every result: {}", report.at("results").size()), md);
}

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
  if (const auto k = report.find("kernel"); k != report.end() && k->is_object()) {
    const std::string label = k->at("label").is_string() ? k->at("label").get<std::string>() : "kernel";
    md += fmt::format("- kernel {}: {} under {}", markdown_text(label), plain(k->at("command")),
                      plain(k->at("contract")));
    if (const auto in = k->find("in_process"); in != k->end() && in->is_boolean() && in->get<bool>())
      md += "; in mqacheck's process";
    else if (const auto starts = k->find("adapter_starts"); starts != k->end() && starts->is_number_integer())
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
  if (!report.at("skipped").empty())
    md += fmt::format("- {} skipped (listed below)\n", counted(report.at("skipped").size(), "pair")), listed = true;
  if (listed) md += "\n";
  md += matrix_markdown(report);
  md += headline_markdown(report);
  md += skipped_list(report);
  md += mutants_table(report);
  md += results_table(report);
  return md;
}

}  // namespace mqa::reports
