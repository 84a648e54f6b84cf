// report.json's writer (reports/report.hpp): a heat map written as the comparator filled it.
#include <catch2/catch.hpp>

#include "reports/report.hpp"

using namespace mqa;

TEST_CASE("a heat map in JSON: a string per row of cells, counts only where there are some", "[reports][heat-map]") {
  compare::heat_map h(3, 300);  // 3 x 128 cells of 2 or 3 keys
  h.add_error(h.cell(0, 0), 0.0);
  h.add_error(h.cell(1, 5), 3.0);
  h.unwritten[h.cell(2, 127)] = 2;  // cell 127 holds keys 298 and 299
  const nlohmann::json j = reports::heat_map_json(h);
  CHECK(j.at("rows") == 3);
  CHECK(j.at("cols") == 128);
  REQUIRE(j.at("error_over_bound").size() == 3);
  CHECK(j.at("error_over_bound")[0].get<std::string>() == "0" + std::string(127, '.'));
  CHECK(j.at("error_over_bound")[1].get<std::string>().substr(0, 7) == ".....C.");
  CHECK(j.at("mask_mismatches").is_null());
  CHECK(j.at("nonfinite").is_null());
  CHECK(j.at("unwritten")[2].get<std::string>() == std::string(127, '.') + "X");
  CHECK(reports::heat_map_json(compare::heat_map()).is_null());
}

TEST_CASE("report.json holds text that is not UTF-8: the bytes replaced, the report whole", "[reports][json]") {
  // An adapter's label and error are its own bytes; one that is not UTF-8 must not cost the report.
  verdict::suite_report r;
  r.suite_name = "s";
  r.file = "s.toml";
  r.kernel = verdict::external_kernel{.command = "python3 adapter.py",
                                      .label = "fast\xff kernel",
                                      .contract = "fp32",
                                      .operation = "prefill",
                                      .timeout_seconds = 1,
                                      .adapter_starts = 1,
                                      .notes = {"label changed to \xfe\xff"}};
  std::string text;
  REQUIRE_NOTHROW(text = reports::report_json_text(reports::suite_json(r)));
  const nlohmann::json back = nlohmann::json::parse(text);
  CHECK(back.at("kernel").at("label") == "fast\xef\xbf\xbd kernel");  // U+FFFD
  CHECK(back.at("kernel").at("notes")[0] == "label changed to \xef\xbf\xbd\xef\xbf\xbd");
}

TEST_CASE("the suite's path and the kernel's command, the user's bytes, are shown \\xNN in report.json as elsewhere",
          "[reports][json]") {
  // The command runs as given; only its report shows it: every format built from report.json alike.
  verdict::suite_report r;
  r.suite_name = "s";
  r.file = "suite\xff.toml";
  r.kernel = verdict::external_kernel{.command = "python3 \xfe\xc3 adapter.py", .label = "k", .contract = "fp32",
                                      .operation = "prefill", .timeout_seconds = 1, .adapter_starts = 1, .notes = {}};
  const nlohmann::json j = reports::suite_json(r);
  CHECK(j.at("file") == "suite\\xFF.toml");
  CHECK(j.at("kernel").at("command") == "python3 \\xFE\\xC3 adapter.py");
}
