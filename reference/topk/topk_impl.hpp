#pragma once

#include <algorithm>
#include <unordered_set>

namespace mqa::topk {

template <class Lookup>
comparison compare_sets(std::span<const std::int64_t> kernel_set, std::span<const std::int64_t> exact_set,
                        Lookup&& lookup) {
  comparison c;
  c.k = static_cast<std::int64_t>(exact_set.size());
  const std::unordered_set<std::int64_t> exact(exact_set.begin(), exact_set.end());
  const std::unordered_set<std::int64_t> kept(kernel_set.begin(), kernel_set.end());
  std::vector<std::pair<double, std::int64_t>> intruders, missing;  // (key, index)
  for (const std::int64_t j : kernel_set) {
    if (exact.count(j)) {
      ++c.overlap;
      continue;
    }
    const keyed v = lookup(j);
    intruders.emplace_back(v.exact + v.bound, j);  // the highest j's true value could be
  }
  for (const std::int64_t e : exact_set) {
    if (kept.count(e)) continue;
    const keyed v = lookup(e);
    missing.emplace_back(v.exact - v.bound, e);  // the lowest e's true value could be
  }
  std::sort(intruders.begin(), intruders.end());
  std::sort(missing.begin(), missing.end());
  for (std::size_t i = 0; i < intruders.size() && i < missing.size(); ++i) {
    if (!(intruders[i].first >= missing[i].first)) {
      c.excused = false;
      c.first_intruder = c.first_intruder < 0 ? intruders[i].second : std::min(c.first_intruder, intruders[i].second);
    }
  }
  if (intruders.size() != missing.size()) c.excused = false;
  return c;
}

}  // namespace mqa::topk
