// The heat map's text in report.json (reports/heat_levels.hpp): levels at their edges, shares in
// tenths, and a map written as the comparator filled it.
#include <catch2/catch.hpp>

#include <limits>

#include "reports/heat_levels.hpp"

using namespace mqa;

TEST_CASE("error/bound levels: each edge belongs to the level below it", "[reports][heat-map]") {
  const auto [ratio, symbol] = GENERATE(table<double, char>({
      {compare::heat_map::kNone, '.'},
      {0.0, '0'},
      {1e-300, '1'},
      {0x1p-9, '1'},
      {std::nextafter(0x1p-9, 1.0), '2'},
      {0x1p-4, '6'},
      {0.5, '9'},
      {0.75, 'A'},
      {1.0, 'A'},
      {std::nextafter(1.0, 2.0), 'B'},
      {2.0, 'B'},
      {16.0, 'C'},
      {1000.0, 'D'},
      {1e30, 'E'},
      {std::numeric_limits<double>::infinity(), 'F'},
  }));
  CAPTURE(ratio);
  CHECK(reports::error_symbol(ratio) == symbol);
  if (symbol != '.') {
    const auto level = reports::error_level_of(symbol);
    REQUIRE(level);
    CHECK((*level >= reports::kFirstFailingLevel) == (ratio > 1));
  }
}

TEST_CASE("count shares: tenths of the cell, rounded up", "[reports][heat-map]") {
  const auto [count, elements, symbol] = GENERATE(table<std::int64_t, std::int64_t, char>({
      {0, 10, '.'}, {1, 1000, '1'}, {1, 10, '1'}, {2, 10, '2'}, {11, 100, '2'}, {9, 10, '9'}, {91, 100, 'X'}, {3, 3, 'X'}}));
  CAPTURE(count, elements);
  CHECK(reports::share_symbol(count, elements) == symbol);
  CHECK(reports::share_level_of(symbol) == reports::kShareSymbols.find(symbol));
}

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
