#pragma once

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace mqa::topk {

template <class Lookup>
comparison compare_sets(std::span<const std::int64_t> kernel_set, std::span<const std::int64_t> exact_set,
                        std::span<const std::int64_t> candidates, Lookup&& lookup) {
  comparison c;
  c.k = static_cast<std::int64_t>(exact_set.size());
  const std::unordered_set<std::int64_t> exact(exact_set.begin(), exact_set.end());
  const std::unordered_set<std::int64_t> kept(kernel_set.begin(), kernel_set.end());
  for (const std::int64_t j : kernel_set) c.overlap += exact.count(j) ? 1 : 0;
  if (c.overlap == c.k) return c;  // the exact set itself

  double highest_dropped = -INFINITY;  // max over dropped keys of exact - bound
  for (const std::int64_t j : candidates) {
    if (kept.count(j)) continue;
    const keyed v = lookup(j);
    highest_dropped = std::max(highest_dropped, v.exact - v.bound);
  }
  for (const std::int64_t j : kernel_set) {
    const keyed v = lookup(j);
    if (!(v.exact + v.bound >= highest_dropped)) {
      c.excused = false;
      if (c.first_intruder < 0 || j < c.first_intruder) c.first_intruder = j;
    }
  }
  return c;
}

}  // namespace mqa::topk
