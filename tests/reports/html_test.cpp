// report.html (reports/html.hpp) as text: self-contained, one section and three figures per
// result, escaped names. tests/reports/html_browser_test.py checks it rendered in Chromium.
#include <catch2/catch.hpp>

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

}  // namespace

TEST_CASE("report.html: a section with a histogram and two heat maps per result", "[reports][html]") {
  const json& r = test::small_report();
  const std::string page = reports::html(r);
  const std::size_t results = r.at("results").size();
  CHECK(page.starts_with("<!DOCTYPE html>"));
  CHECK(count(page, "<section class=\"result\"") == results);
  CHECK(count(page, "<svg class=\"histogram\"") == results);
  CHECK(count(page, "<svg class=\"heatmap errors\"") == results);
  CHECK(count(page, "<svg class=\"heatmap masks\"") == results);
  // One bar per nonempty ULP bucket.
  std::size_t buckets = 0;
  for (const auto& x : r.at("results"))
    for (const auto& c : x.at("metrics").at("ulp").at("histogram_log2")) buckets += c.get<std::int64_t>() > 0;
  CHECK(count(page, "class=\"bar\"") == buckets);
  // Self-contained: nothing fetched, no script.
  CHECK(count(page, "<script") == 0);
  CHECK(count(page, "src=") == 0);
  CHECK(count(page, "http") == 0);
  CHECK(count(page, "href=\"#r") == results);
}

TEST_CASE("report.html: a mask mutant's mismatches and a write mutant's holes are drawn", "[reports][html]") {
  const std::string page = reports::html(test::small_report());
  auto section = [&](const std::string& c, const std::string& v) {
    const auto start = page.find("data-case=\"" + c + "\" data-variant=\"" + v + "\"");
    REQUIRE(start != std::string::npos);
    return page.substr(start, page.find("</section>", start) - start);
  };
  CHECK(section("causal", "mutant-inclusive-end").find("class=\"cell m") != std::string::npos);  // mask mismatches
  CHECK(section("causal", "mutant-tail-tile").find("class=\"cell u\"") != std::string::npos);     // unwritten
  CHECK(section("causal", "fp32-naive").find("class=\"cell m") == std::string::npos);
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
  CHECK(md.find("- kernel mqa-lib 0.4: python3 adapter.py under dot fp32; adapter started 2 time(s)") != std::string::npos);
  CHECK(md.find("| causal | fp32-naive | error | - | - | - | - | - | - | - | error: launch 1: no answer within 300 s (--timeout) |") !=
        std::string::npos);
  CHECK(xml.find("errors=\"1\"") != std::string::npos);
  CHECK(xml.find("<error message=\"launch 1: no answer within 300 s (--timeout)\">") != std::string::npos);
}
