#include "decidedness.hpp"

#include <algorithm>
#include <cmath>

namespace mqa::topk {

interval interval_of(double exact, double bound) {
  if (std::isnan(exact)) exact = INFINITY;  // torch.topk ranks NaN highest
  if (std::isinf(bound)) return {-INFINITY, INFINITY};
  // inf - finite stays inf: a +inf exact value with a finite allowance is [inf, inf].
  return {exact - bound, exact + bound};
}

row_decidedness decide(std::span<const interval> keys, std::int64_t k, std::vector<key_status>* status) {
  row_decidedness d;
  d.window = static_cast<std::int64_t>(keys.size());
  d.k = std::clamp<std::int64_t>(k, 0, d.window);
  std::vector<double> lowers(keys.size()), uppers(keys.size());
  for (std::size_t j = 0; j < keys.size(); ++j) lowers[j] = keys[j].lower, uppers[j] = keys[j].upper;
  std::sort(lowers.begin(), lowers.end());
  std::sort(uppers.begin(), uppers.end());
  if (status) status->assign(keys.size(), key_status::ambiguous);
  for (std::size_t j = 0; j < keys.size(); ++j) {
    // Keys wholly below j: u_i < l_j (j itself never, as l_j <= u_j). Keys wholly above: l_i > u_j.
    const auto below = std::lower_bound(uppers.begin(), uppers.end(), keys[j].lower) - uppers.begin();
    const auto above = lowers.end() - std::upper_bound(lowers.begin(), lowers.end(), keys[j].upper);
    key_status s = key_status::ambiguous;
    if (below >= d.window - d.k) s = key_status::must_keep;  // (a); k' = w keeps every key
    else if (above >= d.k) s = key_status::must_drop;        // (b); k' = 0 drops every key
    (s == key_status::must_keep ? d.must_keep : s == key_status::must_drop ? d.must_drop : d.ambiguous) += 1;
    if (status) (*status)[j] = s;
  }
  return d;
}

namespace {

double median_of(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t half = v.size() / 2;
  return v.size() % 2 ? static_cast<double>(v[half])
                      : (static_cast<double>(v[half - 1]) + static_cast<double>(v[half])) / 2;
}

}  // namespace

decidedness_summary summarise(std::vector<std::pair<std::int64_t, row_decidedness>> rows) {
  decidedness_summary s;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::int64_t> ambiguous, ambiguous_ranked;
  for (const auto& [row, d] : rows) {
    if (d.window == 0) continue;
    ++s.rows;
    s.rows_fully_decided += d.fully_decided() ? 1 : 0;
    s.must_keep += d.must_keep;
    s.must_drop += d.must_drop;
    s.ambiguous += d.ambiguous;
    ambiguous.push_back(d.ambiguous);
    if (d.window > d.k) {
      ++s.rows_ranked;
      s.rows_ranked_fully_decided += d.fully_decided() ? 1 : 0;
      ambiguous_ranked.push_back(d.ambiguous);
    }
    if (s.worst_row < 0 || d.ambiguous > s.worst_ambiguous) s.worst_row = row, s.worst_ambiguous = d.ambiguous, s.worst_k = d.k;
  }
  s.median_ambiguous = median_of(std::move(ambiguous));
  s.median_ambiguous_ranked = median_of(std::move(ambiguous_ranked));
  return s;
}

}  // namespace mqa::topk
