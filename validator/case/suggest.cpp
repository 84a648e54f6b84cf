#include "suggest.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <vector>

namespace mqa::cases {
namespace {

// Levenshtein distance, one row at a time.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string did_you_mean(std::string_view text, std::string_view accepted) {
  std::string_view best;
  std::size_t best_distance = 3;
  while (!accepted.empty()) {
    const std::size_t comma = accepted.find(',');
    std::string_view name = accepted.substr(0, comma);
    accepted = comma == std::string_view::npos ? std::string_view{} : accepted.substr(comma + 1);
    while (name.starts_with(' ')) name.remove_prefix(1);
    const std::size_t d = edit_distance(text, name);
    if (d < best_distance && 2 * d < text.size()) {
      best = name;
      best_distance = d;
    }
  }
  return best.empty() ? "" : fmt::format(", did you mean '{}'?", best);
}

}  // namespace mqa::cases
