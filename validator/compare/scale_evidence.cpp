#include "scale_evidence.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

namespace mqa::compare {
namespace {

// |a - 2^k c| <= 2^k E, evaluated exactly enough: 2^k scaling is exact in double.
bool fits(double a, double c, double e, int k) { return std::fabs(std::ldexp(a, -k) - c) <= e; }

struct interval {
  int lo, hi;
  bool empty;
};

// {k : |a / 2^k - c| <= E}: with t = 2^-k, a t must lie in [c - E, c + E] (a, c of one sign,
// or c within E of 0), an interval of t and so of k.
interval fit_interval(double a, double c, double e) {
  constexpr int kMax = key_scaling::kMaxPower + 1;
  if (a == 0) return std::fabs(c) <= e ? interval{-kMax, kMax, false} : interval{0, 0, true};
  if (a < 0) a = -a, c = -c;
  if (c + e <= 0) return {0, 0, true};
  // a / 2^k <= c + E  <=>  k >= log2(a / (c + E)); a / 2^k >= c - E  <=>  k <= log2(a / (c - E)) when c > E.
  int lo = static_cast<int>(std::ceil(std::log2(a / (c + e))));
  while (lo > -kMax && fits(a, c, e, lo - 1)) --lo;
  while (lo <= kMax && !fits(a, c, e, lo)) ++lo;
  int hi = kMax;
  if (c > e) {
    hi = static_cast<int>(std::floor(std::log2(a / (c - e))));
    while (hi < kMax && fits(a, c, e, hi + 1)) ++hi;
    while (hi >= -kMax && !fits(a, c, e, hi)) --hi;
  }
  lo = std::max(lo, -kMax), hi = std::min(hi, kMax);
  return {lo, hi, lo > hi};
}

int smallest_magnitude(int lo, int hi) {
  if (lo <= 0 && 0 <= hi) return 0;
  return lo > 0 ? lo : hi;
}

}  // namespace

void key_scaling::add_interval(double c, double a, double allowed) {
  // An intersection pinned to one k stays so exactly where this element fits at k (its interval is
  // the run of k that fit), and is emptied otherwise: one test instead of the interval, which is
  // what each element of a scaled key costs once two of them have pinned it.
  if (lo == hi) {
    if (!fits(a, c, allowed, lo)) {
      empty = true;  // an empty key's pinned count is never read
      return;
    }
    if (3 * allowed < std::fabs(c)) ++pinned;
    return;
  }
  const interval f = fit_interval(a, c, allowed);
  if (f.empty) {
    empty = true;
    return;
  }
  if (3 * allowed < std::fabs(c)) ++pinned;
  lo = std::max(lo, f.lo), hi = std::min(hi, f.hi);
  empty = lo > hi;
}

void key_scaling::merge(const key_scaling& o) {
  lo = std::max(lo, o.lo), hi = std::min(hi, o.hi);
  empty = empty || o.empty || lo > hi;
  pinned += o.pinned;
  failures += o.failures;
}

scaling_verdict explain_by_power_of_two(const std::vector<key_scaling>& keys) {
  scaling_verdict v;
  v.scaled_keys.assign(keys.size(), false);
  std::map<int, std::int64_t> by_power;  // failures explained on keys that pin the power
  std::int64_t all_failures = 0;
  for (const auto& k : keys) {
    all_failures += k.failures;
    v.keys_with_evidence += k.failures > 0 ? 1 : 0;
    if (k.failures == 0 || k.empty || k.pinned < 2) continue;
    const int p = smallest_magnitude(k.lo, k.hi);
    if (p != 0 && std::abs(p) <= key_scaling::kMaxPower) by_power[p] += k.failures;
  }
  if (by_power.empty()) return v;
  const auto best = std::max_element(by_power.begin(), by_power.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  const int power = best->first;
  for (std::size_t j = 0; j < keys.size(); ++j) {
    const auto& k = keys[j];
    if (k.failures == 0 || k.empty || power < k.lo || power > k.hi) continue;
    v.scaled_keys[j] = true;
    v.explained += k.failures;
    ++v.keys;
  }
  if (v.explained * 2 < all_failures) {
    v.explained = 0;
    v.keys = 0;
    v.scaled_keys.assign(keys.size(), false);
    return v;
  }
  v.power = power;
  return v;
}

}  // namespace mqa::compare
