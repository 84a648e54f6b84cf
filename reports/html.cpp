#include "html.hpp"

#include <fmt/core.h>

#include "fields.hpp"
#include "report.hpp"
#include "svg.hpp"

namespace mqa::reports {
namespace {

std::string text(const nlohmann::json& v) { return escape_markup(v.get<std::string>()); }

std::string style() {
  std::string css = R"(body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
code{font:13px ui-monospace,monospace}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass,.caught{color:#1a7f37}.FAIL,.error,.silent,.other{color:#cf222e;font-weight:bold}
.verdict.fail{color:#cf222e}.verdict.pass{color:#1a7f37}
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
      "&middot; top-k recall {} &middot; {} in-window elements, {} compared, {} rows judged</p>\n",
      scaled, shown(m.at("max_error_over_bound"), 4), shown(ulp.at("max")), shown(ulp.at("p50")), shown(ulp.at("p99")),
      shown(ulp.at("p999")), shown(ulp.at("share_exact"), 4), shown(m.at("topk_recall"), 4), shown(m.at("in_window")),
      shown(m.at("compared")), shown(m.at("rows_judged")));
}

std::string map_caption(const char* what, const nlohmann::json& map) {
  const auto m = map.at("m").get<std::int64_t>(), n = map.at("n").get<std::int64_t>();
  const auto rows = map.at("rows").get<std::int64_t>(), cols = map.at("cols").get<std::int64_t>();
  return fmt::format("{}: rows 0-{} downwards, keys 0-{} across; {} x {} cells of up to {} row{} x {} key{}, "
                     "each showing its worst element",
                     what, m - 1, n - 1, rows, cols, (m + rows - 1) / rows, (m + rows - 1) / rows == 1 ? "" : "s",
                     (n + cols - 1) / cols, (n + cols - 1) / cols == 1 ? "" : "s");
}

std::string result_section(const nlohmann::json& r, std::size_t index) {
  std::string out = fmt::format(
      "<section class=\"result\" id=\"r{}\" data-case=\"{}\" data-variant=\"{}\">\n<h3>{} &times; {} <span "
      "class=\"{}\">{}</span> <small>({})</small></h3>\n",
      index, text(r.at("case")), text(r.at("variant")), text(r.at("case")), text(r.at("variant")), text(r.at("outcome")),
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
  if (m.is_object()) {
    out += "<div class=\"figs\">\n";
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
    out += "</div>\n";
  }
  return out + "</section>\n";
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
  const bool holds = report.at("expectations_hold").get<bool>();
  out += fmt::format("<p class=\"verdict {}\">{}</p>\n", holds ? "pass" : "fail",
                     holds ? "Every expectation holds." : "EXPECTATIONS BROKEN");
  out += "<ul>\n";
  for (const auto& b : report.at("broken_expectations")) out += fmt::format("<li><b>{}</b></li>\n", text(b));
  for (const auto& s : report.at("skipped"))
    out += fmt::format("<li>skipped: {} on {}: {}</li>\n", text(s.at("variant")), text(s.at("case")), text(s.at("reason")));
  if (shard.is_object())
    out += "<li>one shard of the suite: mutant coverage is judged when the shards are merged (mqacheck merge)</li>\n";
  out += "</ul>\n";
  if (const auto k = report.find("kernel"); k != report.end() && k->is_object())
    out += fmt::format("<p>kernel <b>{}</b>: <code>{}</code> under {}</p>\n",
                       k->at("label").is_string() ? text(k->at("label")) : "kernel", text(k->at("command")),
                       text(k->at("contract")));
  out += fmt::format("<p>{} results from <code>{}</code>; mqacheck {} ({})</p>\n", report.at("results").size(),
                     text(report.at("file")), text(report.at("mqacheck").at("version")),
                     text(report.at("mqacheck").at("commit")));

  out += "<h2>Results</h2>\n<table class=\"results\">\n<tr><th>case</th><th>variant</th><th>outcome</th><th>max "
         "err/bound</th><th>max ULP</th><th>p99 ULP</th><th>findings</th></tr>\n";
  std::size_t index = 0;
  for (const auto& r : report.at("results")) {
    const auto& m = r.at("metrics");
    const nlohmann::json none;
    out += fmt::format("<tr><td><a href=\"#r{}\">{}</a></td><td>{}</td><td class=\"{}\">{}</td><td class=\"num\">{}</td>"
                       "<td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
                       index++, text(r.at("case")), text(r.at("variant")), text(r.at("outcome")), text(r.at("outcome")),
                       shown(m.is_object() ? m.at("max_error_over_bound") : none),
                       shown(m.is_object() ? m.at("ulp").at("max") : none), shown(m.is_object() ? m.at("ulp").at("p99") : none),
                       escape_markup(findings_summary(r)));
  }
  out += "</table>\n";
  if (!report.at("mutants").empty()) {
    out += "<h2>Mutants</h2>\n<table class=\"mutants\">\n<tr><th>mutant</th><th>bug class</th><th>must "
           "produce</th><th>caught by</th></tr>\n";
    for (const auto& m : report.at("mutants")) {
      std::string must, by;
      for (const auto& s : m.at("must_produce")) must += (must.empty() ? "" : " or ") + text(s);
      for (const auto& s : m.at("caught_by")) by += (by.empty() ? "" : ", ") + text(s);
      out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>\n", text(m.at("variant")),
                         text(m.at("bug_class")), must, by.empty() ? "silent" : "caught",
                         by.empty() ? (!mutant_ran(report, m) ? "not exercised: skipped on every case"
                                                              : (shard.is_object() ? "nothing in this shard" : "nothing"))
                                    : by);
    }
    out += "</table>\n";
  }
  out += "<h2>Per case and variant</h2>\n";
  out += legend("error/bound map", error_swatches());
  out += legend("masking map", mask_swatches());
  index = 0;
  for (const auto& r : report.at("results")) out += result_section(r, index++);
  return out + "</body>\n</html>\n";
}

}  // namespace mqa::reports
