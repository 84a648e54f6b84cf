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
