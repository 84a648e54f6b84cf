// report.html (reports/html.hpp) as text: self-contained; the verdict, the case x variant matrix
// and the headline measures before anything folded; matrix cells coloured by standing (a mutant
// silent as expected is no failure); figures only where a result breaks an expectation, for the
// kernel under test and on a mutant's first catch; escaped names. tests/reports/html_browser_test.py
// checks it rendered in Chromium.
#include <catch2/catch.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <set>

#include "reports/escape.hpp"
#include "reports/html.hpp"
#include "reports/junit.hpp"
#include "reports/markdown.hpp"
#include "support/small_run.hpp"

using namespace mqa;
using nlohmann::json;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::size_t index_of(const json& report, const std::string& case_name, const std::string& variant) {
  const auto& results = report.at("results");
  for (std::size_t i = 0; i < results.size(); ++i)
    if (results[i].at("case") == case_name && results[i].at("variant") == variant) return i;
  throw std::logic_error("no such result");
}

std::string section(const std::string& page, std::size_t index) {
  const auto start = page.find(fmt::format("<section class=\"result\" id=\"r{}\"", index));
  REQUIRE(start != std::string::npos);
  return page.substr(start, page.find("</section>", start) - start);
}

std::string section(const std::string& page, const std::string& case_name, const std::string& variant) {
  const auto start = page.find("data-case=\"" + case_name + "\" data-variant=\"" + variant + "\"");
  REQUIRE(start != std::string::npos);
  return page.substr(start, page.find("</section>", start) - start);
}

std::string matrix_of(const std::string& page) {
  const auto start = page.find("id=\"matrix\"");
  REQUIRE(start != std::string::npos);
  return page.substr(start, page.find("</table>", start) - start);
}

// The class of the matrix cell that links to result `index`.
std::string cell_class(const std::string& page, std::size_t index) {
  const std::string matrix = matrix_of(page);
  const auto link = matrix.find(fmt::format("<a href=\"#r{}\">", index));
  REQUIRE(link != std::string::npos);
  const auto td = matrix.rfind("<td class=\"", link);
  REQUIRE(td != std::string::npos);
  const auto from = td + std::string("<td class=\"").size();
  return matrix.substr(from, matrix.find('"', from) - from);
}

// The mutants' first catches, in result order: where a mutant's figures go.
std::set<std::size_t> first_catches(const json& report) {
  std::set<std::size_t> out;
  std::set<std::string> seen;
  const auto& results = report.at("results");
  for (std::size_t i = 0; i < results.size(); ++i)
    if (results[i].at("outcome") == "caught" && seen.insert(results[i].at("variant").get<std::string>()).second)
      out.insert(i);
  return out;
}

// A copy of the small report where fp32-naive has a finding on `case_name`: a correct variant failing.
json with_failure(const std::string& case_name) {
  json r = test::small_report();
  json& failed = test::result_in(r, case_name, "fp32-naive");
  failed["outcome"] = "FAIL";
  failed["verdict"] = "fail";
  failed["findings"] = test::result_in(r, "causal", "mutant-inclusive-end").at("findings");
  r["expectations_hold"] = false;
  r["broken_expectations"] = json::array({"fp32-naive has findings on case '" + case_name + "'"});
  return r;
}

}  // namespace

TEST_CASE("report.html opens with the verdict, the matrix and the headline measures, the rest folded",
          "[reports][html]") {
  const json& r = test::small_report();
  const std::string page = reports::html(r);
  CHECK(page.starts_with("<!DOCTYPE html>"));
  const auto verdict = page.find("id=\"verdict\""), matrix = page.find("id=\"matrix\""),
             headline = page.find("id=\"headline\""), folded = page.find("<details");
  REQUIRE(folded != std::string::npos);
  CHECK(verdict < matrix);
  CHECK(matrix < headline);
  CHECK(headline < folded);
  // A column per case, a row per variant, a cell linking to each result.
  const std::string m = matrix_of(page);
  CHECK(count(m, "<th class=\"case\">") == r.at("cases").size());
  CHECK(count(m, "<th class=\"variant\">") == r.at("variants").size());
  CHECK(count(m, "<a href=\"#r") == r.at("results").size());
  // The skipped pairs counted up front, listed only in their fold.
  const auto& skipped = r.at("skipped");
  REQUIRE(!skipped.empty());
  const std::string pairs = skipped.size() == 1 ? "1 pair" : fmt::format("{} pairs", skipped.size());
  CHECK(page.find(pairs + " skipped</a>") < matrix);
  const auto fold = page.find("<details id=\"skipped\">");
  REQUIRE(fold != std::string::npos);
  for (const auto& s : skipped) {
    const auto listed = page.find(reports::escape_markup(fmt::format(
        "{} on {}: {}", s.at("variant").get<std::string>(), s.at("case").get<std::string>(), s.at("reason").get<std::string>())));
    CHECK(listed > fold);
    CHECK(listed != std::string::npos);
  }
  CHECK(page.find("<details id=\"mutants\">") > fold);
  CHECK(page.find("<details id=\"results\">") > fold);
  // Self-contained: nothing fetched, no script.
  CHECK(count(page, "<script") == 0);
  CHECK(count(page, "src=") == 0);
  CHECK(count(page, "http") == 0);
  CHECK(count(page, "<section class=\"result\"") == r.at("results").size());
}

TEST_CASE("report.html: a mutant silent while another case catches it is no failure; one no case catches is",
          "[reports][html]") {
  json r = test::small_report();
  const std::string mutant = "mutant-tail-tile";
  json* entry = nullptr;
  for (auto& m : r.at("mutants"))
    if (m.at("variant") == mutant) entry = &m;
  REQUIRE(entry != nullptr);
  REQUIRE(entry->at("caught_by").size() >= 2);
  // Silent on its last catching case, still caught on the others.
  const std::string quiet_case = entry->at("caught_by").back().get<std::string>();
  json& quiet = test::result_in(r, quiet_case, mutant);
  quiet["outcome"] = "silent";
  quiet["verdict"] = "pass";
  quiet["findings"] = json::array();
  entry->at("caught_by").erase(entry->at("caught_by").size() - 1);
  const std::size_t q = index_of(r, quiet_case, mutant);
  std::string page = reports::html(r);
  CHECK(cell_class(page, q) == "st-silent");
  CHECK(section(page, q).find("class=\"st-silent\">silent</span>") != std::string::npos);
  CHECK(count(matrix_of(page), "st-broken") == 0);
  CHECK(page.find("id=\"broken\"") == std::string::npos);

  // Caught nowhere: a check went blind, and each of its results breaks the expectations.
  entry->at("caught_by") = json::array();
  for (auto& x : r.at("results"))
    if (x.at("variant") == mutant) x["outcome"] = "silent", x["verdict"] = "pass", x["findings"] = json::array();
  page = reports::html(r);
  std::size_t results_of_mutant = 0;
  for (std::size_t i = 0; i < r.at("results").size(); ++i)
    if (r.at("results")[i].at("variant") == mutant) {
      CHECK(cell_class(page, i) == "st-broken");
      ++results_of_mutant;
    }
  CHECK(count(matrix_of(page), "st-broken") == results_of_mutant);
  // In a shard another shard may catch it: no failure there.
  r["shard"] = {{"index", 1}, {"count", 2}};
  CHECK(count(matrix_of(reports::html(r)), "st-broken") == 0);
}

TEST_CASE("report.html draws figures where a result breaks an expectation and on a mutant's first catch only",
          "[reports][html]") {
  const json& r = test::small_report();
  const std::string page = reports::html(r);
  const auto drawn = first_catches(r);
  REQUIRE(!drawn.empty());
  for (std::size_t i = 0; i < r.at("results").size(); ++i) {
    CAPTURE(i, r.at("results")[i].at("variant"), r.at("results")[i].at("case"));
    const std::string s = section(page, i);
    const std::size_t figures = drawn.contains(i) ? 1 : 0;
    CHECK(count(s, "<svg class=\"histogram\"") == figures);
    CHECK(count(s, "<svg class=\"heatmap errors\"") == figures);
    CHECK(count(s, "<svg class=\"heatmap masks\"") == figures);
    CHECK(count(s, "<p class=\"metrics\">") == 1);
  }
  // One bar per nonempty ULP bucket of the drawn results.
  std::size_t buckets = 0;
  for (const std::size_t i : drawn)
    for (const auto& c : r.at("results")[i].at("metrics").at("ulp").at("histogram_log2")) buckets += c.get<std::int64_t>() > 0;
  CHECK(count(page, "class=\"bar\"") == buckets);
  CHECK(count(page, "<p class=\"legend\"><b>error/bound map</b>") == 1);

  // A correct variant's failure: drawn, red, shown open before anything folded.
  const json failing = with_failure("sliding");
  const std::string broken_page = reports::html(failing);
  const std::size_t f = index_of(failing, "sliding", "fp32-naive");
  CHECK(cell_class(broken_page, f) == "st-broken");
  CHECK(count(section(broken_page, f), "<svg") == 3);
  CHECK(broken_page.find(fmt::format("id=\"r{}\"", f)) < broken_page.find("<details"));
  CHECK(broken_page.find("EXPECTATIONS BROKEN") < broken_page.find("id=\"matrix\""));
  CHECK(count(section(broken_page, index_of(failing, "causal", "fp32-naive")), "<svg") == 0);
  // The legend of the maps goes with the open figures as well as the folded ones.
  CHECK(count(broken_page, "<p class=\"legend\"><b>error/bound map</b>") == 2);
}

TEST_CASE("report.html: five broken expectations listed before the matrix, the rest folded", "[reports][html]") {
  json r = with_failure("sliding");
  for (int i = 1; i <= 6; ++i) r["broken_expectations"].push_back(fmt::format("broken expectation number {}", i));
  REQUIRE(r["broken_expectations"].size() == 7);
  const std::string page = reports::html(r);
  const auto matrix = page.find("id=\"matrix\""), more = page.find("<summary>and 2 more</summary>");
  REQUIRE(more != std::string::npos);
  CHECK(more < matrix);
  for (int i = 1; i <= 4; ++i) CHECK(page.find(fmt::format("number {}</b>", i)) < more);
  for (int i = 5; i <= 6; ++i) CHECK(page.find(fmt::format("number {}</b>", i)) > more);
  CHECK(page.find("number 6</b>") < matrix);
}

TEST_CASE("report.html: a mask mutant's mismatches and a write mutant's holes are drawn", "[reports][html]") {
  const json& r = test::small_report();
  const std::string page = reports::html(r);
  // Both mutants are first caught on the first case, where their figures are.
  REQUIRE(first_catches(r).contains(index_of(r, "causal", "mutant-inclusive-end")));
  REQUIRE(first_catches(r).contains(index_of(r, "causal", "mutant-tail-tile")));
  CHECK(section(page, "causal", "mutant-inclusive-end").find("class=\"cell m") != std::string::npos);  // mask mismatches
  CHECK(section(page, "causal", "mutant-tail-tile").find("class=\"cell u\"") != std::string::npos);     // unwritten
}

TEST_CASE("report.html: the headline measures are each correct variant's worst case", "[reports][html]") {
  const json& r = test::small_report();
  const std::string page = reports::html(r);
  const auto start = page.find("id=\"headline\"");
  REQUIRE(start != std::string::npos);
  const std::string table = page.substr(start, page.find("</table>", start) - start);
  for (const std::string variant : {"fp32-naive", "sm90-wgmma"}) {
    CAPTURE(variant);
    double p99 = 0, error_over_bound = 0;
    std::size_t cases = 0;
    for (const auto& x : r.at("results")) {
      if (x.at("variant") != variant) continue;
      ++cases;
      p99 = std::max(p99, x.at("metrics").at("magnitude_ulp").at("p99").get<double>());
      error_over_bound = std::max(error_over_bound, x.at("metrics").at("max_error_over_bound").get<double>());
    }
    const auto row = table.find("<tr><td>" + variant + "</td>");
    REQUIRE(row != std::string::npos);
    const std::string line = table.substr(row, table.find("</tr>", row) - row);
    CHECK(line.find(fmt::format("<td class=\"num\">{}</td>", cases)) != std::string::npos);
    CHECK(line.find(fmt::format("<td class=\"num\">{:.3g}</td>", p99)) != std::string::npos);
    CHECK(line.find(fmt::format("<td class=\"num\">{:.2g}</td>", error_over_bound)) != std::string::npos);
  }
  CHECK(table.find("mutant-") == std::string::npos);
}

TEST_CASE("report.html escapes what reports carry", "[reports][html]") {
  json r = test::small_report();
  r["suite"] = "<b>&\"x'";
  r["results"][0]["variant"] = "<script>alert(1)</script>";
  const std::string page = reports::html(r);
  CHECK(count(page, "<script") == 0);
  CHECK(count(page, "&lt;script&gt;alert(1)&lt;/script&gt;") >= 2);
  CHECK(count(page, "&lt;b&gt;&amp;&quot;x&#39;") >= 2);
}

TEST_CASE("an external kernel's report: the kernel named, a case its adapter failed on shown", "[reports][html]") {
  json r = test::small_report();
  r["kernel"] = {{"command", "python3 adapter.py"}, {"label", "mqa-lib 0.4"}, {"contract", "dot fp32"}, {"adapter_starts", 2}};
  json& failed = r["results"][0];
  failed["error"] = "launch 1: no answer within 300 s (--timeout)\nthe adapter's stderr ended with:\n  | Killed";
  failed["outcome"] = "error";
  failed["verdict"] = nullptr;
  failed["metrics"] = nullptr;
  failed["findings"] = json::array();
  const std::string page = reports::html(r), md = reports::markdown(r), xml = reports::junit_xml(r);
  CHECK(page.find("kernel <b>mqa-lib 0.4</b>: <code>python3 adapter.py</code>") != std::string::npos);
  CHECK(page.find("<pre class=\"error\">launch 1: no answer") != std::string::npos);
  CHECK(page.find("nothing measured") != std::string::npos);
  // The kernel under test: every measured result drawn, and its measures case by case.
  std::size_t measured = 0;
  for (const auto& x : r.at("results")) measured += x.at("metrics").is_object();
  CHECK(count(page, "<svg class=\"heatmap errors\"") == measured);
  CHECK(page.find("<table class=\"kernel-cases\">") < page.find("<details"));
  // The case it could not judge breaks an expectation: open, before anything folded.
  CHECK(page.find("<pre class=\"error\">") < page.find("<details"));
  CHECK(md.find("- kernel mqa-lib 0.4: python3 adapter.py under dot fp32; adapter started 2 time(s)") != std::string::npos);
  CHECK(md.find("| causal | fp32-naive | error | - | - | - | - | - | - | - | - | error: launch 1: no answer within 300 s (--timeout) |") !=
        std::string::npos);
  CHECK(xml.find("errors=\"1\"") != std::string::npos);
  CHECK(xml.find("<error message=\"launch 1: no answer within 300 s (--timeout)\">") != std::string::npos);
}
