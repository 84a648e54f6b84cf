// The heat map's symbols in report.json (validator/verdict/heat_levels.hpp): levels at their
// edges, shares in tenths.
#include <catch2/catch.hpp>

#include <limits>

#include "validator/compare/heat_map.hpp"
#include "validator/verdict/heat_levels.hpp"

using namespace mqa;

TEST_CASE("error/bound levels: each edge belongs to the level below it", "[verdict][heat-map]") {
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
  CHECK(verdict::error_symbol(ratio) == symbol);
  if (symbol != '.') {
    const auto level = verdict::error_level_of(symbol);
    REQUIRE(level);
    CHECK((*level >= verdict::kFirstFailingLevel) == (ratio > 1));
  }
}

TEST_CASE("count shares: tenths of the cell, rounded up", "[verdict][heat-map]") {
  const auto [count, elements, symbol] = GENERATE(table<std::int64_t, std::int64_t, char>({
      {0, 10, '.'}, {1, 1000, '1'}, {1, 10, '1'}, {2, 10, '2'}, {11, 100, '2'}, {9, 10, '9'}, {91, 100, 'X'}, {3, 3, 'X'}}));
  CAPTURE(count, elements);
  CHECK(verdict::share_symbol(count, elements) == symbol);
  CHECK(verdict::share_level_of(symbol) == verdict::kShareSymbols.find(symbol));
}
