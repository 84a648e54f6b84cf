// summary.md (reports/markdown.hpp) in report.html's order: the verdict, the broken expectations,
// the case x variant matrix with each cell's standing marked, the headline measures, the skipped
// pairs counted and listed folded, the mutants, every result folded.
#include <catch2/catch.hpp>

#include <fmt/core.h>

#include <sstream>
#include <vector>

#include "reports/markdown.hpp"
#include "support/small_run.hpp"

using namespace mqa;
using nlohmann::json;

namespace {

// The matrix row of `variant`, split into its cells (the variant's name first).
std::vector<std::string> matrix_row(const std::string& md, const std::string& variant) {
  const auto matrix = md.find("**Case x variant"), end = md.find("**Headline");
  REQUIRE(matrix != std::string::npos);
  const auto row = md.find("\n| " + variant + " |", matrix);
  REQUIRE(row < end);
  const std::string line = md.substr(row + 3, md.find('\n', row + 1) - row - 3);
  std::vector<std::string> cells;
  std::istringstream in(line);
  for (std::string cell; std::getline(in, cell, '|');) cells.push_back(cell.substr(1, cell.size() - 2));
  return cells;
}

}  // namespace

TEST_CASE("summary.md: verdict, matrix, headline measures, skipped pairs folded, mutants, results folded",
          "[reports][markdown]") {
  const json& r = test::small_report();
  const std::string md = reports::markdown(r);
  const auto& skipped = r.at("skipped");
  REQUIRE(!skipped.empty());
  CHECK(md.starts_with("## mqacheck: suite small - every expectation holds\n"));
  const std::string pairs = skipped.size() == 1 ? "1 pair" : fmt::format("{} pairs", skipped.size());
  const auto count = md.find("- " + pairs + " skipped"), matrix = md.find("**Case x variant"),
             headline = md.find("**Headline"), fold = md.find("<details><summary>" + pairs + " skipped</summary>"),
             mutants = md.find("**Mutants**"), results = md.find("<details><summary>Every result");
  CHECK(count < matrix);
  CHECK(matrix < headline);
  CHECK(headline < fold);
  CHECK(fold < mutants);
  CHECK(mutants < results);
  CHECK(results != std::string::npos);
  for (const auto& s : skipped) CHECK(md.find(s.at("reason").get<std::string>()) > fold);
  // A row per variant, a cell per case.
  for (const auto& v : r.at("variants")) CHECK(matrix_row(md, v.at("variant")).size() == r.at("cases").size() + 1);
  CHECK(md.find("| fp32-naive | " + std::to_string(r.at("cases").size()) + " |", headline) < fold);
  CHECK(md.find("| mutant-", headline) > fold);  // no headline row for a mutant
  CHECK(md.find("| case | variant | outcome |") > results);
}

TEST_CASE("summary.md's matrix: a mutant silent as expected is no failure, a correct variant's finding is",
          "[reports][markdown]") {
  json r = test::small_report();
  // mutant-tail-tile silent on its last catching case, caught on the others.
  json* entry = nullptr;
  for (auto& m : r.at("mutants"))
    if (m.at("variant") == "mutant-tail-tile") entry = &m;
  REQUIRE(entry != nullptr);
  REQUIRE(entry->at("caught_by").size() >= 2);
  const std::string quiet_case = entry->at("caught_by").back().get<std::string>();
  json& quiet = test::result_in(r, quiet_case, "mutant-tail-tile");
  quiet["outcome"] = "silent";
  quiet["findings"] = json::array();
  entry->at("caught_by").erase(entry->at("caught_by").size() - 1);
  // fp32-naive with findings on the first case.
  const std::string first_case = r.at("cases")[0].at("case").get<std::string>();
  json& failed = test::result_in(r, first_case, "fp32-naive");
  failed["outcome"] = "FAIL";
  failed["findings"] = test::result_in(r, first_case, "mutant-inclusive-end").at("findings");

  const std::string md = reports::markdown(r);
  std::size_t column = 0;
  for (std::size_t c = 0; c < r.at("cases").size(); ++c)
    if (r.at("cases")[c].at("case") == quiet_case) column = c + 1;
  REQUIRE(column > 0);
  const auto mutant_cells = matrix_row(md, "mutant-tail-tile");
  CHECK(mutant_cells[column].starts_with("· "));
  for (const auto& cell : mutant_cells) CHECK(cell.find("✗") == std::string::npos);
  const auto naive = matrix_row(md, "fp32-naive");
  CHECK(naive[1].starts_with("**✗ "));
  for (std::size_t c = 2; c < naive.size(); ++c) CHECK(naive[c].find("✗") == std::string::npos);
}

TEST_CASE("summary.md: a kernel under test's results stay open, case by case", "[reports][markdown]") {
  json r = test::small_report();
  CHECK(reports::markdown(r).find("**The kernel, case by case**") == std::string::npos);
  r["kernel"] = {{"command", "python3 adapter.py"}, {"label", "mqa-lib 0.4"}, {"contract", "dot fp32"}, {"adapter_starts", 1}};
  const std::string md = reports::markdown(r);
  const auto open = md.find("**The kernel, case by case**");
  REQUIRE(open != std::string::npos);
  CHECK(md.find("| case | variant | outcome |") > open);
  CHECK(md.find("<details><summary>Every result") == std::string::npos);
  CHECK(md.find("**Mutants**") < open);
}
