#include "html.hpp"

#include <fmt/core.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "fields.hpp"
#include "report.hpp"
#include "svg.hpp"

namespace mqa::reports {
namespace {

std::string text(const nlohmann::json& v) { return escape_markup(v.get<std::string>()); }

// The colours of a result's standing (fields.hpp) in the matrix, its section and the legend.
struct standing_colour {
  const char* name;
  const char* background;
  const char* meaning;
};
constexpr standing_colour kStandings[] = {
    {"pass", "#d8f0de", "a correct variant without findings"},
    {"caught", "#b5dfc0", "a mutant caught: a finding of its bug's class"},
    {"silent", "#e6e6e6", "a mutant silent on this case, as expected while another case catches it"},
    {"other", "#efe8d2", "a mutant's findings of other classes, as expected while another case catches it"},
    {"broken", "#ffc9c9", "breaks an expectation: findings of a correct variant, no judgement, a mutant no case caught"},
};

std::string style() {
  std::string css = R"(body{font:14px/1.4 system-ui,sans-serif;margin:1em 1.5em;color:#222}
h1{font-size:20px;margin:.2em 0}h2{font-size:16px;margin:.8em 0 .3em}
code{font:13px ui-monospace,monospace}
table{border-collapse:collapse;margin:.3em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
p{margin:.3em 0}ul{margin:.2em 0}
.verdict{font-size:18px;font-weight:bold;margin:.2em 0}
.verdict.fail{color:#cf222e}.verdict.pass{color:#1a7f37}
table.matrix{font-size:11px;line-height:1.2}
table.headline th,table.headline td,table.kernel-cases td{white-space:nowrap}
table.matrix td,table.matrix th{padding:1px 3px}
table.matrix td{text-align:right;font-variant-numeric:tabular-nums;min-width:2.6em}
table.matrix td a{color:inherit;text-decoration:none;display:block}
table.matrix th.case{vertical-align:bottom;padding:3px 1px}
table.matrix th.case span{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}
table.matrix th.variant{font-weight:normal;white-space:nowrap}
table.matrix tr.group th{background:#f4f4f4;font-weight:bold}
td.skipped,.swatch.skipped{background:repeating-linear-gradient(45deg,#fff 0 3px,#eee 3px 5px)}
td.st-broken,span.st-broken{color:#a40e26;font-weight:bold}
details{margin:.6em 0}summary{cursor:pointer;font-weight:bold}
section.result{border-top:1px solid #ccc;margin-top:1em;padding-top:.3em}
.figs{display:flex;flex-wrap:wrap;gap:1.2em;align-items:flex-start}
figure{margin:0}figcaption{font-size:12px;color:#555;max-width:330px}
svg text{font:8px sans-serif;text-anchor:middle;fill:#555}
svg text.empty{font-size:10px}
svg .bar{fill:#4292c6}svg .axis{stroke:#888;stroke-width:.5}
svg.heatmap{border:1px solid #999;background:#fff}
svg .worst{fill:none;stroke:#ff0;stroke-width:.6;vector-effect:non-scaling-stroke}
.swatch{display:inline-block;width:1em;height:1em;border:1px solid #999;vertical-align:middle}
)";
  for (const auto& s : kStandings) css += fmt::format(".st-{}{{background:{}}}\n", s.name, s.background);
  for (const auto* swatches : {&error_swatches(), &mask_swatches()})
    for (const auto& s : *swatches)
      css += fmt::format("svg .{0}{{fill:{1}}}.swatch.{0}{{background:{1}}}\n", s.css_class, s.colour);
  return css;
}

std::string legend(const char* title, const std::vector<swatch>& swatches) {
  std::string out = fmt::format("<p class=\"legend\"><b>{}</b>: ", title);
  for (const auto& s : swatches)
    out += fmt::format("<span class=\"swatch {}\"></span> {} &nbsp; ", s.css_class, escape_markup(s.meaning));
  return out + "</p>\n";
}

std::string map_legends() { return legend("error/bound map", error_swatches()) + legend("masking map", mask_swatches()); }

std::string metrics_line(const nlohmann::json& m) {
  if (!m.is_object()) return "<p class=\"metrics\">nothing measured</p>\n";
  const auto& ulp = m.at("ulp");
  // The condition-free scales first (docs/contracts.md); an older report has none.
  std::string scaled;
  if (const auto a = m.find("magnitude_ulp"); a != m.end() && a->is_object())
    scaled = fmt::format("ULPs of A p50 <b>{}</b>, p99 <b>{}</b>, max <b>{}</b> &middot; ", shown(a->at("p50")),
                         shown(a->at("p99")), shown(a->at("max")));
  if (const auto w = m.find("conditioned_ulp"); w != m.end() && w->is_object())
    scaled += fmt::format("well conditioned ({} of compared): ULP p99 {}, max {} &middot; ", shown(w->at("share"), 3),
                          shown(w->at("p99")), shown(w->at("max")));
  return fmt::format(
      "<p class=\"metrics\">{}max error/bound <b>{}</b> &middot; ULP max {}, p50 {}, p99 {}, p99.9 {} &middot; exact {} "
      "&middot; top-k recall {} &middot; top-k decidedness {} &middot; {} in-window elements, {} compared, {} rows "
      "judged</p>\n",
      scaled, shown(m.at("max_error_over_bound"), 4), shown(ulp.at("max")), shown(ulp.at("p50")), shown(ulp.at("p99")),
      shown(ulp.at("p999")), shown(ulp.at("share_exact"), 4), shown(m.at("topk_recall"), 4),
      escape_markup(decidedness_text(m)), shown(m.at("in_window")), shown(m.at("compared")),
      shown(m.at("rows_judged")));
}

std::string map_caption(const char* what, const nlohmann::json& map) {
  const auto m = map.at("m").get<std::int64_t>(), n = map.at("n").get<std::int64_t>();
  const auto rows = map.at("rows").get<std::int64_t>(), cols = map.at("cols").get<std::int64_t>();
  return fmt::format("{}: rows 0-{} downwards, keys 0-{} across; {} x {} cells of up to {} row{} x {} key{}, "
                     "each showing its worst element",
                     what, m - 1, n - 1, rows, cols, (m + rows - 1) / rows, (m + rows - 1) / rows == 1 ? "" : "s",
                     (n + cols - 1) / cols, (n + cols - 1) / cols == 1 ? "" : "s");
}

std::string figures(const nlohmann::json& m) {
  std::string out = "<div class=\"figs\">\n";
  out += fmt::format("<figure>{}<figcaption>ULP distance to the correctly rounded value, log2 buckets (0, 1, 2-3, "
                     "4-7, ...); bar heights on a log scale</figcaption></figure>\n",
                     histogram_svg(m.at("ulp").at("histogram_log2")));
  const auto& map = m.at("heat_map");
  if (map.is_object()) {
    out += fmt::format("<figure>{}<figcaption>{}</figcaption></figure>\n", error_map_svg(map, m.at("worst")),
                       map_caption("error/bound", map));
    out += fmt::format("<figure>{}<figcaption>{}</figcaption></figure>\n", mask_map_svg(map),
                       map_caption("masking and writes", map));
  }
  return out + "</div>\n";
}

// Which results are drawn. A figure tells where and how a kernel goes wrong, so: every result
// that breaks an expectation, every result of the kernel under test (`run --kernel`), and each
// mutant once, on the first case that caught it (what its bug looks like). A correct built-in
// variant that passes, and a mutant's further cases, get their metrics line alone: drawn, they
// made the quick suite's page megabytes of figures that say "nothing to see".
std::set<std::size_t> drawn_results(const nlohmann::json& report) {
  std::set<std::size_t> drawn;
  std::set<std::string> mutants_drawn;
  const bool kernel_run = report.contains("kernel") && report.at("kernel").is_object();
  const auto& results = report.at("results");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (!r.at("metrics").is_object()) continue;
    const auto standing_now = standing(report, r);
    const bool first_catch = standing_now == "caught" && mutants_drawn.insert(r.at("variant").get<std::string>()).second;
    if (kernel_run || standing_now == "broken" || first_catch) drawn.insert(i);
  }
  return drawn;
}

std::string result_section(const nlohmann::json& report, const nlohmann::json& r, std::size_t index, bool drawn) {
  std::string out = fmt::format(
      "<section class=\"result\" id=\"r{}\" data-case=\"{}\" data-variant=\"{}\">\n<h3>{} &times; {} <span "
      "class=\"st-{}\">{}</span> <small>({})</small></h3>\n",
      index, text(r.at("case")), text(r.at("variant")), text(r.at("case")), text(r.at("variant")), standing(report, r),
      text(r.at("outcome")), text(r.at("kind")));
  if (const auto e = r.find("error"); e != r.end() && e->is_string())
    out += fmt::format("<pre class=\"error\">{}</pre>\n", escape_markup(e->get<std::string>()));
  const auto& findings = r.at("findings");
  if (!findings.empty()) {
    out += "<ul class=\"findings\">\n";
    for (const auto& f : findings) out += fmt::format("<li><code>{}</code></li>\n", escape_markup(describe(finding_of(f))));
    out += "</ul>\n";
  }
  for (const auto& n : r.at("notes")) out += fmt::format("<p class=\"note\">note: {}</p>\n", text(n));
  const auto& m = r.at("metrics");
  out += metrics_line(m);
  if (drawn) out += figures(m);
  return out + "</section>\n";
}

std::string kernel_line(const nlohmann::json& report) {
  const auto k = report.find("kernel");
  if (k == report.end() || !k->is_object()) return "";
  const auto in = k->find("in_process");
  return fmt::format("<p class=\"kernel\">kernel <b>{}</b>: <code>{}</code> under {}{}</p>\n",
                     k->at("label").is_string() ? text(k->at("label")) : "kernel", text(k->at("command")),
                     text(k->at("contract")),
                     in != k->end() && in->is_boolean() && in->get<bool>() ? "; in mqacheck's process" : "");
}

// A few broken expectations in full; beyond them the list folds, so that a kernel failing every
// case still leaves the matrix, which shows each failure red, on the first screen.
constexpr std::size_t kBrokenShown = 5;

std::string broken_list(const nlohmann::json& broken) {
  if (broken.empty()) return "";
  std::string out = "<ul class=\"broken\">\n";
  for (std::size_t i = 0; i < broken.size() && i < kBrokenShown; ++i)
    out += fmt::format("<li><b>{}</b></li>\n", text(broken[i]));
  out += "</ul>\n";
  if (broken.size() <= kBrokenShown) return out;
  out += fmt::format("<details class=\"broken\"><summary>and {} more</summary>\n<ul class=\"broken\">\n",
                     broken.size() - kBrokenShown);
  for (std::size_t i = kBrokenShown; i < broken.size(); ++i) out += fmt::format("<li><b>{}</b></li>\n", text(broken[i]));
  return out + "</ul>\n</details>\n";
}


std::string verdict_block(const nlohmann::json& report) {
  const bool holds = report.at("expectations_hold").get<bool>();
  std::string out = fmt::format("<p class=\"verdict {}\" id=\"verdict\">{}</p>\n", holds ? "pass" : "fail",
                                holds ? "Every expectation holds." : "EXPECTATIONS BROKEN");
  out += broken_list(report.at("broken_expectations"));
  out += kernel_line(report);
  if (report.at("shard").is_object())
    out += "<p>One shard of the suite: mutant coverage is judged when the shards are merged (mqacheck merge).</p>\n";
  const auto& skipped = report.at("skipped");
  out += fmt::format("<p class=\"counts\">{} of {} on {}{} from <code>{}</code>; mqacheck {} ({})</p>\n",
                     counted(report.at("results").size(), "result"), counted(variant_order(report).size(), "variant"),
                     counted(case_order(report).size(), "case"),
                     skipped.empty() ? "" : fmt::format(", <a href=\"#skipped\">{} skipped</a>,", counted(skipped.size(), "pair")),
                     text(report.at("file")), text(report.at("mqacheck").at("version")),
                     text(report.at("mqacheck").at("commit")));
  return out;
}

using pair_key = std::pair<std::string, std::string>;  // case, variant

std::string matrix_cell(const nlohmann::json& report, const nlohmann::json& r, std::size_t index) {
  const auto& m = r.at("metrics");
  const std::string shown_value = m.is_object() ? shown(m.at("max_error_over_bound"), 2) : text(r.at("outcome"));
  const std::string findings = findings_summary(r);
  return fmt::format("<td class=\"st-{}\" title=\"{}{}\"><a href=\"#r{}\">{}</a></td>", standing(report, r),
                     text(r.at("outcome")), findings == "-" ? "" : ": " + escape_markup(findings), index, shown_value);
}

bool variant_is_mutant(const nlohmann::json& report, const std::string& variant) {
  for (const auto& v : report.at("variants"))
    if (v.at("variant").get<std::string_view>() == variant) return v.at("kind").get<std::string_view>() == "mutant";
  for (const auto& r : report.at("results"))
    if (r.at("variant").get<std::string_view>() == variant) return is_mutant(r);
  return false;
}

// Where each (case, variant) pair went: its result's index, or why it was skipped.
struct pair_index {
  std::map<pair_key, std::size_t> result_at;
  std::map<pair_key, std::string> skipped_why;  // escaped
};

pair_index index_pairs(const nlohmann::json& report) {
  pair_index out;
  const auto& results = report.at("results");
  for (std::size_t i = 0; i < results.size(); ++i)
    out.result_at.emplace(pair_key{results[i].at("case").get<std::string>(), results[i].at("variant").get<std::string>()},
                          i);
  for (const auto& s : report.at("skipped"))
    out.skipped_why.emplace(pair_key{s.at("case").get<std::string>(), s.at("variant").get<std::string>()},
                            text(s.at("reason")));
  return out;
}

std::string matrix_row(const nlohmann::json& report, const pair_index& pairs, const std::vector<std::string>& cases,
                       const std::string& variant) {
  std::string out = fmt::format("<tr><th class=\"variant\">{}</th>", escape_markup(variant));
  for (const auto& c : cases) {
    if (const auto r = pairs.result_at.find({c, variant}); r != pairs.result_at.end())
      out += matrix_cell(report, report.at("results")[r->second], r->second);
    else if (const auto s = pairs.skipped_why.find({c, variant}); s != pairs.skipped_why.end())
      out += fmt::format("<td class=\"skipped\" title=\"skipped: {}\"></td>", s->second);
    else
      out += "<td></td>";  // run in another shard
  }
  return out + "</tr>\n";
}

std::string matrix_legend() {
  std::string out = "<p class=\"legend\">";
  for (const auto& s : kStandings)
    out += fmt::format("<span class=\"swatch st-{}\"></span> {} &nbsp; ", s.name, s.meaning);
  return out + "<span class=\"swatch skipped\"></span> skipped. A cell links to its result.</p>\n";
}

// Rows are variants, columns cases: a suite has a few dozen variants but fewer cases, and the
// case names stand upright so that the columns stay as narrow as their numbers.
std::string matrix_html(const nlohmann::json& report) {
  const auto cases = case_order(report);
  const pair_index pairs = index_pairs(report);
  std::string out =
      "<h2 id=\"matrix\">Case &times; variant: max error/bound</h2>\n<table class=\"matrix\">\n<tr><th></th>";
  for (const auto& c : cases) out += fmt::format("<th class=\"case\"><span>{}</span></th>", escape_markup(c));
  out += "</tr>\n";
  bool mutants_begun = false;
  for (const auto& variant : variant_order(report)) {
    if (!mutants_begun && variant_is_mutant(report, variant)) {
      mutants_begun = true;
      out += fmt::format("<tr class=\"group\"><th colspan=\"{}\">mutants: each must be caught on some case</th></tr>\n",
                         cases.size() + 1);
    }
    out += matrix_row(report, pairs, cases, variant);
  }
  return out + "</table>\n" + matrix_legend();
}

std::string headline_cells(const headline& h) {
  return fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                     "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
                     shown_measure(h.magnitude_p50), shown_measure(h.magnitude_p99), shown_measure(h.magnitude_p999),
                     shown_measure(h.magnitude_max), shown_measure(h.conditioned_share), shown_measure(h.conditioned_p99),
                     shown_measure(h.conditioned_max), shown_measure(h.error_over_bound, 2));
}

constexpr const char* kHeadlineColumns =
    "<th>ULPs of A p50</th><th>p99</th><th>p99.9</th><th>max</th><th>well conditioned share</th><th>their ULP "
    "p99</th><th>max</th><th>max err/bound</th>";

// The condition-free scales of docs/contracts.md, per correct variant, each the worst case's.
std::string headline_html(const nlohmann::json& report) {
  const auto rows = headlines(report);
  if (rows.empty()) return "";
  std::string out = fmt::format(
      "<h2 id=\"headline\">Headline measures of the correct variants</h2>\n<p>The worst case of each: the largest "
      "percentile, maximum and error/bound, the smallest share of well-conditioned elements.</p>\n"
      "<table class=\"headline\">\n<tr><th>variant</th><th>cases</th>{}<th>on case</th></tr>\n",
      kHeadlineColumns);
  for (const auto& h : rows)
    out += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td>{}<td>{}</td></tr>\n", escape_markup(h.variant), h.cases,
                       headline_cells(h), escape_markup(h.worst_case));
  return out + "</table>\n";
}

// The kernel under test, case by case: the one variant of a `run --kernel` report.
std::string kernel_cases_table(const nlohmann::json& report) {
  if (kernel_line(report).empty()) return "";
  std::string out = fmt::format("<h2>The kernel, case by case</h2>\n<table class=\"kernel-cases\">\n<tr><th>case</th>"
                                "<th>outcome</th>{}</tr>\n",
                                kHeadlineColumns);
  const auto& results = report.at("results");
  for (std::size_t i = 0; i < results.size(); ++i)
    out += fmt::format("<tr><td><a href=\"#r{}\">{}</a></td><td class=\"st-{}\">{}</td>{}</tr>\n", i,
                       text(results[i].at("case")), standing(report, results[i]), text(results[i].at("outcome")),
                       headline_cells(headline_of(results[i])));
  return out + "</table>\n";
}

std::string skipped_details(const nlohmann::json& report) {
  const auto& skipped = report.at("skipped");
  if (skipped.empty()) return "";
  std::string out = fmt::format("<details id=\"skipped\"><summary>{} skipped</summary>\n<ul>\n",
                                counted(skipped.size(), "pair"));
  for (const auto& s : skipped)
    out += fmt::format("<li>{} on {}: {}</li>\n", text(s.at("variant")), text(s.at("case")), text(s.at("reason")));
  return out + "</ul>\n</details>\n";
}

std::string mutants_details(const nlohmann::json& report) {
  const auto& mutants = report.at("mutants");
  if (mutants.empty()) return "";
  const bool shard = report.at("shard").is_object();
  std::size_t caught = 0, unexercised = 0;
  std::string rows;
  for (const auto& m : mutants) {
    std::string must, by;
    for (const auto& s : m.at("must_produce")) must += (must.empty() ? "" : " or ") + text(s);
    for (const auto& s : m.at("caught_by")) by += (by.empty() ? "" : ", ") + text(s);
    const bool ran = mutant_ran(report, m);
    caught += !by.empty();
    unexercised += !ran;
    const char* standing_now = !by.empty() ? "caught" : (!ran || shard ? "silent" : "broken");
    if (by.empty()) by = !ran ? "not exercised: skipped on every case" : (shard ? "nothing in this shard" : "nothing");
    rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"st-{}\">{}</td></tr>\n", text(m.at("variant")),
                        text(m.at("bug_class")), must, standing_now, by);
  }
  return fmt::format("<details id=\"mutants\"><summary>Mutants: {} caught of {}{}</summary>\n<table class=\"mutants\">\n"
                     "<tr><th>mutant</th><th>bug class</th><th>must produce</th><th>caught by</th></tr>\n{}</table>\n"
                     "</details>\n",
                     caught, mutants.size(), unexercised ? fmt::format(", {} not exercised", unexercised) : "", rows);
}

// Results that break an expectation open, with their figures; the rest folded below.
std::string broken_sections(const nlohmann::json& report, const std::set<std::size_t>& drawn) {
  std::string sections;
  const auto& results = report.at("results");
  for (std::size_t i = 0; i < results.size(); ++i)
    if (breaks_expectation(report, results[i])) sections += result_section(report, results[i], i, drawn.contains(i));
  if (sections.empty()) return "";
  return "<h2 id=\"broken\">What breaks the expectations</h2>\n" + map_legends() + sections;
}

std::string results_details(const nlohmann::json& report, const std::set<std::size_t>& drawn) {
  std::string sections;
  std::size_t shown_here = 0, drawn_here = 0;
  const auto& results = report.at("results");
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (breaks_expectation(report, results[i])) continue;
    sections += result_section(report, results[i], i, drawn.contains(i));
    ++shown_here;
    drawn_here += drawn.contains(i);
  }
  if (shown_here == 0) return "";
  return fmt::format("<details id=\"results\"><summary>Per case and variant: {} results, {} with figures</summary>\n{}{}"
                     "</details>\n",
                     shown_here, drawn_here, drawn_here ? map_legends() : "", sections);
}

}  // namespace

std::string html(const nlohmann::json& report) {
  const std::string suite = text(report.at("suite"));
  const auto& shard = report.at("shard");
  const std::string part =
      shard.is_object() ? fmt::format(" (shard {}/{})", shard.at("index").get<int>(), shard.at("count").get<int>()) : "";
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>mqacheck: suite {}{}</title>\n"
      "<style>\n{}</style>\n</head>\n<body>\n<h1>mqacheck: suite <code>{}</code>{}</h1>\n",
      suite, part, style(), suite, part);
  const auto drawn = drawn_results(report);
  out += verdict_block(report);
  out += matrix_html(report);
  out += headline_html(report);
  out += kernel_cases_table(report);
  out += broken_sections(report, drawn);
  out += skipped_details(report);
  out += mutants_details(report);
  out += results_details(report, drawn);
  return out + "</body>\n</html>\n";
}

}  // namespace mqa::reports
