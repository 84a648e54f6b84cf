// sample_rows(): the rows a huge case is checked on (priorities in logits.hpp). The random part
// uses splitmix64, written out here so that the same seed gives the same rows on every platform
// and standard library (std::uniform_int_distribution is implementation-defined).
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "reference/exact/logits.hpp"

namespace mqa::exact {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The window-edge rows, in priority order (duplicates are dropped by the caller).
std::vector<std::int64_t> edge_rows(const problem& p) {
  std::vector<std::int64_t> edges;
  std::int64_t first_empty = -1, shortest = -1, longest = -1, clamped_low = -1, clamped_high = -1, moved = -1;
  std::int64_t shortest_len = 0, longest_len = 0;
  for (std::int64_t i = 0; i < p.m; ++i) {
    const auto at = static_cast<std::size_t>(i);
    const window w = clamped_window(p, i);
    const std::int64_t len = w.end - w.begin;
    if (w.empty() && first_empty < 0) first_empty = i;
    if (!w.empty() && (shortest < 0 || len < shortest_len)) shortest = i, shortest_len = len;
    if (!w.empty() && (longest < 0 || len > longest_len)) longest = i, longest_len = len;
    if (p.ks[at] < 0 && clamped_low < 0) clamped_low = i;
    if (p.ke[at] > p.n && clamped_high < 0) clamped_high = i;
    if (i > 0 && moved < 0 && (p.ks[at] > p.ks[at - 1] || p.ke[at] < p.ke[at - 1])) moved = i;
  }
  for (const std::int64_t r : {first_empty, shortest, longest, clamped_low, clamped_high, moved})
    if (r >= 0) edges.push_back(r);
  return edges;
}

}  // namespace

std::vector<std::int64_t> sample_rows(const problem& p, std::size_t count, std::uint64_t seed) {
  if (p.m < 0 || static_cast<std::int64_t>(p.ks.size()) != p.m || static_cast<std::int64_t>(p.ke.size()) != p.m)
    throw std::invalid_argument(fmt::format("mqa::exact::sample_rows: ks has {} and ke {} entries, expected m = {}",
                                            p.ks.size(), p.ke.size(), p.m));
  const auto m = static_cast<std::size_t>(p.m);
  std::vector<std::int64_t> rows;
  if (count >= m) {
    for (std::int64_t i = 0; i < p.m; ++i) rows.push_back(i);
    return rows;
  }
  std::set<std::int64_t> chosen;
  std::vector<std::int64_t> candidates{0, p.m - 1};
  const std::vector<std::int64_t> edges = edge_rows(p);
  candidates.insert(candidates.end(), edges.begin(), edges.end());
  for (const std::int64_t r : candidates)
    if (chosen.size() < count) chosen.insert(r);
  std::uint64_t state = seed;
  while (chosen.size() < count) chosen.insert(static_cast<std::int64_t>(splitmix64(state) % m));
  return {chosen.begin(), chosen.end()};
}

}  // namespace mqa::exact
