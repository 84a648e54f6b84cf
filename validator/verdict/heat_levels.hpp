// The heat map of a result in report.json (reports/README.md, "Heat maps"), as text: one string
// per row of cells, one character per cell, so that a 128 x 128 map is 16 KiB of readable text (a
// tile-shaped bug shows in the JSON itself) rather than 16384 numbers. Error/bound in levels by
// powers of two; the counts (mask mismatches, unwritten, NaN/inf) as the share of the cell's
// elements, in tenths, and null where no cell has any. These symbols are the format; the map is
// written by reports/report.hpp (heat_map_json), drawn by reports/svg.hpp and checked when a
// report is read back (read_report.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mqa::verdict {

// Symbol '.' is a cell where nothing was compared; then the first level whose `up_to` holds the
// cell's largest error/bound. '0'..'A' are within the bound, 'B'..'F' beyond it.
struct error_level {
  char symbol;
  double up_to;            // largest error/bound of the level (inclusive)
  std::string_view range;  // for legends: "(2^-4, 2^-3]"
};
inline constexpr char kNothingCompared = '.';
extern const std::array<error_level, 16> kErrorLevels;

char error_symbol(double error_over_bound);
// The level of a symbol (its index in kErrorLevels), or nullopt for '.' and anything unknown.
std::optional<std::size_t> error_level_of(char symbol);
inline constexpr std::size_t kFirstFailingLevel = 11;  // 'B': error/bound above 1

// Share symbols: '.' none, '1'..'9' a share in ((k-1)/10, k/10], 'X' more than 9/10.
inline constexpr std::string_view kShareSymbols = ".123456789X";
char share_symbol(std::int64_t count, std::int64_t cell_elements);
// 0 for '.', k for the k-th symbol, nullopt for anything else.
std::optional<std::size_t> share_level_of(char symbol);

}  // namespace mqa::verdict
