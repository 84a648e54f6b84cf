#include "diff_text.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "fields.hpp"

namespace mqa::reports {
namespace {

using json = nlohmann::json;
using verdict::regression;
using verdict::report_diff;

std::string joined(const std::vector<std::string>& items, std::string_view separator = ", ") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : std::string(separator)) + s;
  return out;
}

std::string shown_ms(const json& seconds) {
  const auto s = measure(seconds);
  return s ? fmt::format("{:.3g} ms", *s * 1e3) : "-";
}

}  // namespace

json diff_json(const report_diff& d) {
  json out{{"schema", "mqacheck.diff"},
           {"schema_version", 1},
           {"suite", d.suite},
           {"baseline", d.baseline_info},
           {"new", d.new_info},
           {"regressed", d.regressed()},
           {"max_slowdown", d.max_slowdown ? json(*d.max_slowdown) : json(nullptr)},
           {"regressions", json::array()},
           {"improvements", d.improvements},
           {"cases", json::array()},
           {"pairs", json::array()},
           {"mutants", json::array()}};
  for (const auto& r : d.regressions)
    out["regressions"].push_back({{"kind", r.kind}, {"case", r.case_name}, {"variant", r.variant}, {"text", r.text}});
  out["accepted"] = json::array();
  for (const auto& r : d.accepted)
    out["accepted"].push_back({{"kind", r.kind}, {"case", r.case_name}, {"variant", r.variant}, {"text", r.text}});
  for (const auto& c : d.cases) out["cases"].push_back({{"case", c.name}, {"status", c.status}, {"changes", c.changes}});
  for (const auto& p : d.pairs) {
    json metrics = json::object();
    for (const auto& m : p.metrics) metrics[m.name] = {{"baseline", m.baseline}, {"new", m.now}};
    out["pairs"].push_back({{"case", p.case_name},
                            {"variant", p.variant},
                            {"baseline_variant", p.baseline_variant},
                            {"status", p.status},
                            {"changed", p.changed()},
                            {"outcome", {{"baseline", p.baseline_outcome}, {"new", p.new_outcome}}},
                            {"findings", {{"baseline", p.baseline_findings}, {"new", p.new_findings}}},
                            {"classes_added", p.classes_added},
                            {"classes_removed", p.classes_removed},
                            {"metrics", metrics}});
  }
  for (const auto& m : d.mutants)
    out["mutants"].push_back({{"variant", m.variant},
                              {"caught_by", {{"baseline", m.in_baseline ? json(m.baseline_caught_by) : json(nullptr)},
                                             {"new", m.in_new ? json(m.new_caught_by) : json(nullptr)}}}});
  return out;
}

namespace {

// "a" when both sides agree, "a -> b" when not.
std::string both(const std::string& a, const std::string& b) { return a == b ? a : fmt::format("{} -> {}", a, b); }

struct row {
  std::vector<std::string> cells;
};

std::vector<row> table_rows(const report_diff& d) {
  std::vector<row> rows;
  for (const auto& p : d.pairs) {
    const bool slow = std::any_of(d.regressions.begin(), d.regressions.end(), [&](const regression& r) {
      return r.kind == "slower" && r.case_name == p.case_name && r.variant == p.variant;
    });
    // A changed case's pairs are not compared: the case's line says why, once.
    if ((!p.changed() && !slow) || p.status == "case-changed") continue;
    auto metric = [&](std::string_view name, int digits) {
      for (const auto& m : p.metrics)
        if (m.name == name) {
          if (name == "kernel_seconds") return both(shown_ms(m.baseline), shown_ms(m.now));
          return both(shown(m.baseline, digits), shown(m.now, digits));
        }
      return std::string("-");
    };
    std::string variant = p.baseline_variant.empty() || p.baseline_variant == p.variant
                              ? p.variant
                              : fmt::format("{} -> {}", p.baseline_variant, p.variant);
    std::string outcome = p.status == "compared" ? both(p.baseline_outcome, p.new_outcome)
                          : p.status == "added"  ? "(new) " + p.new_outcome
                          : p.status == "vanished" ? p.baseline_outcome + " (gone)"
                                                   : "not compared: case changed";
    std::string findings = both(p.baseline_findings.empty() ? "-" : p.baseline_findings,
                                p.new_findings.empty() ? "-" : p.new_findings);
    rows.push_back({{p.case_name, variant, outcome, findings, metric("max_error_over_bound", 3),
                     metric("magnitude_ulp_p99", 3), metric("ulp_p99", 3), metric("ulp_max", 3),
                     metric("kernel_seconds", 3)}});
  }
  return rows;
}

// The error in ULPs of the magnitude first, the raw ULPs after it (docs/contracts.md: raw ULPs of a
// cancelling element measure the case, not the kernel).
const std::vector<std::string> kColumns{"case",          "variant",         "outcome",     "findings",
                                        "max err/bound", "p99 ULPs of A", "raw p99 ULP", "raw max ULP",
                                        "kernel time"};

std::string verdict_line(const report_diff& d) {
  std::size_t compared = 0, changed = 0;
  for (const auto& p : d.pairs) {
    compared += p.status == "compared";
    changed += p.changed();
  }
  return fmt::format("{} pairs compared, {} changed; {}", compared, changed,
                     d.regressed() ? fmt::format("REGRESSED ({})", d.regressions.size()) : std::string("nothing regressed"));
}

std::string build_of(const json& info) {
  return fmt::format("mqacheck {} {}", info.at("mqacheck").at("version").get<std::string>(),
                     info.at("mqacheck").at("commit").get<std::string>());
}

}  // namespace

// Names, paths, versions and the sentences that quote them come from the reports (an adapter's
// text among them): each shown on its line, never obeyed by the terminal (escape.hpp).
std::string diff_table(const report_diff& d) {
  std::string out = fmt::format("suite '{}': baseline {} ({}), new {} ({})\n", terminal_line(d.suite),
                                terminal_line(d.baseline_info.at("path").get<std::string>()),
                                terminal_line(build_of(d.baseline_info)),
                                terminal_line(d.new_info.at("path").get<std::string>()),
                                terminal_line(build_of(d.new_info)));
  auto rows = table_rows(d);
  for (auto& r : rows)
    for (auto& cell : r.cells) cell = terminal_line(cell);
  if (!rows.empty()) {
    std::vector<std::size_t> width(kColumns.size());
    for (std::size_t c = 0; c < kColumns.size(); ++c) {
      width[c] = kColumns[c].size();
      for (const auto& r : rows) width[c] = std::max(width[c], r.cells[c].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
      std::string s;
      for (std::size_t c = 0; c < cells.size(); ++c) s += fmt::format("{:<{}}  ", cells[c], width[c]);
      while (!s.empty() && s.back() == ' ') s.pop_back();
      return s + "\n";
    };
    // Two appends, not "\n" + line(...): GCC 12 misreads that in this file as an overlapping copy
    // (-Wrestrict, GCC bug 105329).
    out += "\n";
    out += line(kColumns);
    for (const auto& r : rows) out += line(r.cells);
  }
  for (const auto& c : d.cases)
    if (c.status != "same")
      out += fmt::format("case '{}': {}{}{}\n", terminal_line(c.name), c.status, c.changes.empty() ? "" : ": ",
                         terminal_line(joined(c.changes, "; ")));
  for (const auto& m : d.mutants)
    if (m.in_baseline && m.in_new && m.baseline_caught_by != m.new_caught_by)
      out += fmt::format("mutant '{}': caught by {} -> {}\n", terminal_line(m.variant),
                         m.baseline_caught_by.empty() ? "nothing" : terminal_line(joined(m.baseline_caught_by)),
                         m.new_caught_by.empty() ? "nothing" : terminal_line(joined(m.new_caught_by)));
  if (!d.improvements.empty()) {
    out += fmt::format("\nimprovements ({}):\n", d.improvements.size());
    for (const auto& i : d.improvements) out += "  + " + terminal_line(i) + "\n";
  }
  if (!d.accepted.empty()) {
    out += fmt::format("\naccepted ({}):\n", d.accepted.size());
    for (const auto& r : d.accepted)
      out += fmt::format("  ~ [{}] {} (--accept-weaker-contract)\n", r.kind, terminal_line(r.text));
  }
  if (!d.regressions.empty()) {
    out += fmt::format("\nregressions ({}):\n", d.regressions.size());
    for (const auto& r : d.regressions) out += fmt::format("  - [{}] {}\n", r.kind, terminal_line(r.text));
  }
  return out + "\n" + verdict_line(d) + "\n";
}

// Suite, case and variant names, paths and the sentences that quote them come from elsewhere:
// each goes through markdown_text.
std::string diff_markdown(const report_diff& d) {
  std::string md = fmt::format("## mqacheck diff: suite {} - {}\n\nbaseline {} ({}), new {} ({})\n\n",
                               markdown_text(d.suite), markdown_text(verdict_line(d)),
                               markdown_text(d.baseline_info.at("path").get<std::string>()),
                               markdown_text(build_of(d.baseline_info)),
                               markdown_text(d.new_info.at("path").get<std::string>()), markdown_text(build_of(d.new_info)));
  if (!d.regressions.empty()) {
    md += "### Regressions\n\n";
    for (const auto& r : d.regressions) md += fmt::format("- **{}**: {}\n", markdown_text(r.kind), markdown_text(r.text));
    md += "\n";
  }
  if (!d.accepted.empty()) {
    md += "### Accepted (--accept-weaker-contract)\n\n";
    for (const auto& r : d.accepted) md += fmt::format("- **{}**: {}\n", markdown_text(r.kind), markdown_text(r.text));
    md += "\n";
  }
  if (!d.improvements.empty()) {
    md += "### Improvements\n\n";
    for (const auto& i : d.improvements) md += "- " + markdown_text(i) + "\n";
    md += "\n";
  }
  const auto rows = table_rows(d);
  if (!rows.empty()) {
    md += "### Changed results\n\n|";
    for (const auto& c : kColumns) md += " " + c + " |";
    md += "\n|---|---|---|---|---:|---:|---:|---:|---:|\n";
    for (const auto& r : rows) {
      md += "|";
      for (const auto& c : r.cells) md += fmt::format(" {} |", markdown_text(c));
      md += "\n";
    }
    md += "\n";
  }
  for (const auto& c : d.cases)
    if (c.status != "same")
      md += fmt::format("- case {}: {}\n", markdown_text(c.name),
                        markdown_text(fmt::format("{}{}{}", c.status, c.changes.empty() ? "" : ": ", joined(c.changes, "; "))));
  return md;
}

}  // namespace mqa::reports
