// The registry of report formats (reports/formats.hpp): every format is one row, written from the
// report.json document alone; report.json is listed first and put in place last.
#include <catch2/catch.hpp>

#include <set>

#include "reports/formats.hpp"
#include "support/small_run.hpp"

using namespace mqa;

TEST_CASE("each report format is one row with a file, a writer and a description", "[reports][formats]") {
  const auto formats = reports::report_formats();
  REQUIRE(!formats.empty());
  CHECK(formats.front().file == "report.json");
  std::set<std::string_view> files;
  for (const auto& f : formats) {
    CAPTURE(f.file);
    CHECK(files.insert(f.file).second);
    CHECK(f.write != nullptr);
    CHECK(!f.description.empty());
    CHECK(f.description.find('\n') == std::string_view::npos);
  }
}

TEST_CASE("a run's files: one per format, report.json put in place last", "[reports][formats]") {
  const auto& report = test::small_report();
  const auto files = reports::report_files(report);
  const auto names = reports::report_file_names();
  REQUIRE(files.size() == reports::report_formats().size());
  REQUIRE(names.size() == files.size());
  for (std::size_t f = 0; f < files.size(); ++f) CHECK(files[f].name == names[f]);
  CHECK(names.back() == "report.json");
  CHECK(nlohmann::json::parse(files.back().text) == report);
  for (const auto& f : files) CHECK(!f.text.empty());
}

TEST_CASE("the file lists run and merge print come from the registry", "[reports][formats]") {
  CHECK(reports::report_file_list(false) == "report.json, report.xml, summary.md and report.html");
  CHECK(reports::report_file_list(true) == "report.json, report.xml (JUnit), summary.md and report.html");
}
