#pragma once

#include <algorithm>
#include <cmath>

namespace mqa::topk {

template <class Lookup>
comparison compare_sets(std::span<const std::int64_t> kernel_set, std::span<const std::int64_t> exact_set,
                        std::span<const std::int64_t> candidates, Lookup&& lookup) {
  comparison c;
  c.k = static_cast<std::int64_t>(exact_set.size());
  // Both sets come ascending from largest(): their overlap by one merge.
  for (std::size_t a = 0, b = 0; a < kernel_set.size() && b < exact_set.size();) {
    if (kernel_set[a] == exact_set[b]) ++c.overlap, ++a, ++b;
    else if (kernel_set[a] < exact_set[b]) ++a;
    else ++b;
  }
  if (c.overlap == c.k) return c;  // the exact set itself

  double highest_dropped = -INFINITY;  // max over dropped keys of their lower end
  for (const std::int64_t j : candidates) {
    if (std::binary_search(kernel_set.begin(), kernel_set.end(), j)) continue;
    const keyed v = lookup(j);
    highest_dropped = std::max(highest_dropped, interval_of(v.exact, v.bound).lower);
  }
  for (const std::int64_t j : kernel_set) {
    const keyed v = lookup(j);
    if (interval_of(v.exact, v.bound).upper < highest_dropped) {
      c.excused = false;
      if (c.first_intruder < 0 || j < c.first_intruder) c.first_intruder = j;
    }
  }
  return c;
}

}  // namespace mqa::topk
