// report.xml (reports/junit.hpp): what a CI view shows of a failure without opening it, and the
// pairs the run skipped.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include "reports/junit.hpp"
#include "support/small_run.hpp"

using namespace mqa;
using nlohmann::json;

TEST_CASE("a failure's message is its first finding with detail and diagnosis, escaped", "[reports][junit]") {
  json r = test::small_report();
  json& failed = r["results"][0];
  failed["kind"] = "model";
  failed["verdict"] = "fail";
  failed["outcome"] = "FAIL";
  failed["findings"] = json::array(
      {{{"class", "mask-shift"}, {"count", 127}, {"first", {0, 71}}, {"expected_bits", "0xFF800000"},
        {"actual_bits", "0x3F800000"}, {"expected", "-inf"}, {"actual", "1"}, {"bound", 0.0},
        {"detail", "window end shifted by +1 <ke & \"inclusive\">"},
        {"diagnosis", {{"cause", "inclusive-end"}, {"bit_for_bit", true}, {"sentence", "matches a window end read as inclusive"}}}},
       {{"class", "mask-leak"}, {"count", 3}, {"first", {1, 2}}, {"expected_bits", "0xFF800000"},
        {"actual_bits", "0x3F800000"}, {"expected", "-inf"}, {"actual", "1"}, {"bound", 0.0}, {"detail", ""},
        {"diagnosis", nullptr}}});
  const std::string xml = reports::junit_xml(r);
  CHECK(xml.find("<failure message=\"mask-shift x127 first at (i=0, j=71): expected 0xFF800000 (-inf), got 0x3F800000 (1)"
                 " - window end shifted by +1 &lt;ke &amp; &quot;inclusive&quot;&gt; - diagnosis: matches a window end read "
                 "as inclusive\">") != std::string::npos);
  CHECK(xml.find("mask-leak x3") != std::string::npos);  // every finding in the body
}

TEST_CASE("a skipped pair is a <skipped> test case with its reason", "[reports][junit]") {
  json r = test::small_report();
  r["skipped"] = json::array({{{"case", "causal"}, {"variant", "gfx942-mfma"}, {"reason", "takes e4m3fnuz <q> & k"}}});
  const std::string xml = reports::junit_xml(r);
  CHECK(xml.find("<testcase classname=\"" + r.at("suite").get<std::string>() +
                 ".gfx942-mfma\" name=\"causal\">\n    <skipped message=\"takes e4m3fnuz &lt;q&gt; &amp; k\"/>\n  </testcase>") !=
        std::string::npos);
  CHECK(xml.find(fmt::format("tests=\"{}\"", r.at("results").size() + 1 + r.at("mutants").size())) != std::string::npos);
}

TEST_CASE("a run whose expectations break with no pair failing has a failing test case of its own", "[reports][junit]") {
  json r = test::small_report();
  REQUIRE(r.at("expectations_hold").get<bool>());
  const std::string holds = reports::junit_xml(r);
  CHECK(holds.find("every expectation holds") == std::string::npos);
  // Every pair skipped: nothing failed, nothing erred, and yet the run is no pass.
  r["results"] = json::array();
  r["mutants"] = json::array();
  r["skipped"] = json::array({{{"case", "causal"}, {"variant", "k"}, {"reason", "unsupported"}}});
  r["expectations_hold"] = false;
  r["broken_expectations"] = json::array({"not one case was judged: every pair (1) was skipped <why>"});
  const std::string xml = reports::junit_xml(r);
  CHECK(xml.find("tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"1\"") != std::string::npos);
  CHECK(xml.find("<failure message=\"not one case was judged: every pair (1) was skipped &lt;why&gt;\">") !=
        std::string::npos);
  SECTION("where a pair already fails, the run adds none") {
    r["results"] = test::small_report().at("results");
    r["results"][0]["kind"] = "model";
    r["results"][0]["verdict"] = "fail";
    CHECK(reports::junit_xml(r).find("every expectation holds") == std::string::npos);
  }
}
