#include "heat_levels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace mqa::verdict {

const std::array<error_level, 16> kErrorLevels{{
    {'0', 0, "0"},
    {'1', 0x1p-9, "(0, 2^-9]"},
    {'2', 0x1p-8, "(2^-9, 2^-8]"},
    {'3', 0x1p-7, "(2^-8, 2^-7]"},
    {'4', 0x1p-6, "(2^-7, 2^-6]"},
    {'5', 0x1p-5, "(2^-6, 2^-5]"},
    {'6', 0x1p-4, "(2^-5, 2^-4]"},
    {'7', 0x1p-3, "(2^-4, 2^-3]"},
    {'8', 0x1p-2, "(2^-3, 2^-2]"},
    {'9', 0x1p-1, "(2^-2, 2^-1]"},
    {'A', 1, "(2^-1, 1]"},
    {'B', 2, "(1, 2]"},
    {'C', 16, "(2, 16]"},
    {'D', 1024, "(16, 1024]"},
    {'E', std::numeric_limits<double>::max(), "above 1024"},
    {'F', std::numeric_limits<double>::infinity(), "infinite (error where the bound is 0)"},
}};

char error_symbol(double r) {
  if (!(r >= 0)) return kNothingCompared;  // heat_map::kNone
  for (const auto& level : kErrorLevels)
    if (r <= level.up_to) return level.symbol;
  return kErrorLevels.back().symbol;
}

std::optional<std::size_t> error_level_of(char symbol) {
  for (std::size_t l = 0; l < kErrorLevels.size(); ++l)
    if (kErrorLevels[l].symbol == symbol) return l;
  return std::nullopt;
}

char share_symbol(std::int64_t count, std::int64_t elements) {
  if (count <= 0 || elements <= 0) return kShareSymbols[0];
  // ceil(10 * count / elements) in integers: k tenths hold shares in ((k-1)/10, k/10].
  const std::int64_t tenths = std::min<std::int64_t>((10 * count + elements - 1) / elements, 10);
  return kShareSymbols[static_cast<std::size_t>(std::max<std::int64_t>(tenths, 1))];
}

std::optional<std::size_t> share_level_of(char symbol) {
  const auto at = kShareSymbols.find(symbol);
  if (at == std::string_view::npos) return std::nullopt;
  return at;
}

}  // namespace mqa::verdict
