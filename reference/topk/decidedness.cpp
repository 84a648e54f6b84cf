#include "decidedness.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "reference/topk/narrow.hpp"

namespace mqa::topk {

namespace {

// The r-th largest of `ends` (1 <= r <= size) where a sample narrows the search (narrow.hpp), else
// nullopt; never where an end is NaN, which no ordering ranks: the caller selects over every end.
std::optional<double> narrowed_rth_largest(const std::vector<double>& ends, std::size_t r) {
  if (std::any_of(ends.begin(), ends.end(), [](double e) { return std::isnan(e); })) return std::nullopt;
  thread_local std::vector<double> sample, passing;
  const std::optional<double> threshold = detail::sampled_threshold<double>(ends, r, sample);
  if (!threshold) return std::nullopt;
  const std::size_t n = ends.size();
  passing.resize(n);
  std::size_t passed = 0;
  for (const double e : ends) {
    passing[passed] = e;
    passed += e >= *threshold ? 1 : 0;
  }
  if (passed < r || passed > n / 2) return std::nullopt;
  const auto nth = passing.begin() + static_cast<std::ptrdiff_t>(r - 1);
  std::nth_element(passing.begin(), nth, passing.begin() + static_cast<std::ptrdiff_t>(passed), std::greater<>());
  return *nth;
}

}  // namespace

// The counts of the theorem from two order statistics, in O(w) (the comparator decides every
// judged row, 65536 keys each at production shapes): at least w - k' upper ends lie below l_j
// exactly when the (w - k')-th smallest upper end, the (k' + 1)-th largest, does (l_j <= u_j: j
// never counts itself), and at least k' lower ends lie above u_j exactly when the k'-th largest
// lower end does.
row_decidedness decide(std::span<const interval> keys, std::int64_t k, std::vector<key_status>* status) {
  row_decidedness d;
  d.window = static_cast<std::int64_t>(keys.size());
  d.k = std::clamp<std::int64_t>(k, 0, d.window);
  thread_local std::vector<double> ends;
  // Below keep_above: a lower end above it keeps the key (a). k' = w keeps every key.
  double keep_above = -INFINITY;
  bool keep_all = d.k == d.window;
  if (!keep_all) {
    ends.resize(keys.size());
    for (std::size_t j = 0; j < keys.size(); ++j) ends[j] = keys[j].upper;
    if (const auto narrowed = narrowed_rth_largest(ends, static_cast<std::size_t>(d.k) + 1)) {
      keep_above = *narrowed;
    } else {
      const auto nth = ends.begin() + (d.window - d.k - 1);
      std::nth_element(ends.begin(), nth, ends.end());
      keep_above = *nth;
    }
  }
  // An upper end below drop_below drops the key (b). k' = 0 drops every key.
  double drop_below = INFINITY;
  const bool drop_all = d.k == 0;
  if (!drop_all && !keep_all) {
    ends.resize(keys.size());
    for (std::size_t j = 0; j < keys.size(); ++j) ends[j] = keys[j].lower;
    if (const auto narrowed = narrowed_rth_largest(ends, static_cast<std::size_t>(d.k))) {
      drop_below = *narrowed;
    } else {
      const auto nth = ends.begin() + (d.k - 1);
      std::nth_element(ends.begin(), nth, ends.end(), std::greater<>());
      drop_below = *nth;
    }
  }
  if (status) status->assign(keys.size(), key_status::ambiguous);
  for (std::size_t j = 0; j < keys.size(); ++j) {
    key_status s = key_status::ambiguous;
    if (keep_all || keys[j].lower > keep_above) s = key_status::must_keep;
    else if (drop_all || keys[j].upper < drop_below) s = key_status::must_drop;
    (s == key_status::must_keep ? d.must_keep : s == key_status::must_drop ? d.must_drop : d.ambiguous) += 1;
    if (status) (*status)[j] = s;
  }
  return d;
}

namespace {

double median_of(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  const std::size_t half = v.size() / 2;
  const auto upper = v.begin() + static_cast<std::ptrdiff_t>(half);
  std::nth_element(v.begin(), upper, v.end());
  if (v.size() % 2) return static_cast<double>(*upper);
  return (static_cast<double>(*std::max_element(v.begin(), upper)) + static_cast<double>(*upper)) / 2;
}

}  // namespace

decidedness_summary summarise(std::vector<std::pair<std::int64_t, row_decidedness>> rows) {
  decidedness_summary s;
  const auto by_row = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(rows.begin(), rows.end(), by_row)) std::sort(rows.begin(), rows.end(), by_row);
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
    if (s.worst_row < 0 || d.ambiguous > s.worst_ambiguous) {
      s.worst_row = row;
      s.worst_ambiguous = d.ambiguous;
      s.worst_k = d.k;
    }
  }
  s.median_ambiguous = median_of(std::move(ambiguous));
  s.median_ambiguous_ranked = median_of(std::move(ambiguous_ranked));
  return s;
}

}  // namespace mqa::topk
