// The decidedness oracle: every k-subset of a small row enumerated, each tested for admissibility
// directly from the intervals (some threshold t with every kept key able to reach t from below and
// every dropped key able to sit at or under t: then putting kept keys at max(lower, t) and dropped
// keys at min(upper, t) ranks the kept set first), and a key's status read off the admissible sets;
// a smaller set is extendable when some admissible set of k keys contains it.
// Shares no code with reference/topk: no sort, no counting argument.
#pragma once

#include <cstdint>
#include <vector>

namespace mqa::test::topk_oracle {

struct key_interval {
  double lower, upper;
};

enum class status { always, never, sometimes };

inline bool admissible(const std::vector<key_interval>& keys, std::uint32_t kept) {
  // Thresholds worth trying: every end (a separating t, when one exists, can be moved to an end).
  for (const auto& candidate : keys)
    for (const double t : {candidate.lower, candidate.upper}) {
      bool ok = true;
      for (std::size_t j = 0; j < keys.size() && ok; ++j) {
        const bool in = (kept >> j) & 1u;
        ok = in ? keys[j].upper >= t : keys[j].lower <= t;
      }
      if (ok) return true;
    }
  return false;
}

// One status per key, over the sets of exactly k keys (every key when k >= size).
inline std::vector<status> statuses(const std::vector<key_interval>& keys, int k) {
  const int w = static_cast<int>(keys.size());
  if (k > w) k = w;
  std::vector<int> in_sets(keys.size(), 0);
  int sets = 0;
  for (std::uint32_t kept = 0; kept < (1u << w); ++kept) {
    if (__builtin_popcount(kept) != k || !admissible(keys, kept)) continue;
    ++sets;
    for (int j = 0; j < w; ++j) in_sets[static_cast<std::size_t>(j)] += (kept >> j) & 1u;
  }
  std::vector<status> out;
  for (const int c : in_sets) out.push_back(c == sets ? status::always : c == 0 ? status::never : status::sometimes);
  return out;
}

// Whether the keys of `kept` (fewer than k' = min(k, size) of them, say) are all in some
// admissible set of exactly k' keys: every superset of that size tried.
inline bool extendable(const std::vector<key_interval>& keys, std::uint32_t kept, int k) {
  const int w = static_cast<int>(keys.size());
  if (k > w) k = w;
  for (std::uint32_t set = 0; set < (1u << w); ++set)
    if ((set & kept) == kept && __builtin_popcount(set) == k && admissible(keys, set)) return true;
  return false;
}

}  // namespace mqa::test::topk_oracle
