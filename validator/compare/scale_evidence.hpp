// Evidence that in-window values are off by one power of two, key by key: what a format mix-up
// (e4m3fn bytes read as e4m3fnuz: half the value), a scale applied twice or a ue8m0 exponent off
// by one looks like. For each compared element the set of k with |actual - 2^k c| <= 2^k E (c the
// centre, E the bound) is an interval of integers; a key is scaled by 2^k when k lies in the
// interval of every compared element of that key and some element fails at k = 0. The factor is
// judged over all compared values of a key, not only the failing ones, so a loose contract (where
// many values stay within the bound) cannot hide it and a stray element cannot fake it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace mqa::compare {

struct key_scaling {
  static constexpr int kMaxPower = 16;   // |k| considered; beyond, "unbounded"
  int lo = -kMaxPower - 1, hi = kMaxPower + 1;  // the intersection of the elements' intervals
  bool empty = false;                    // some element fits no k, or the intervals do not meet
  std::int32_t pinned = 0;   // elements whose interval holds one k at most (|c| > 3 E)
  std::int32_t failures = 0;

  // Inline: the comparator calls it for every compared element.
  void add(float centre, float actual, double allowed, bool fails) {
    failures += fails ? 1 : 0;
    if (empty) return;
    const double c = centre;
    // The common case, cheaply: a value pinned within its bound at k = 0 rules out every other k.
    if (!fails && 3 * allowed < std::fabs(c)) {
      lo = std::max(lo, 0), hi = std::min(hi, 0);
      ++pinned;
      empty = lo > hi;
      return;
    }
    // A passing element fits k = 0 (|a - c| <= E is its test), and its interval is one run of k,
    // so an intersection already pinned to {0} stays {0}: most elements of a correct output.
    if (!fails && lo == 0 && hi == 0) return;
    add_interval(c, actual, allowed);
  }
  void merge(const key_scaling& other);
 private:
  void add_interval(double centre, double actual, double allowed);  // the rest of add()
};

struct scaling_verdict {
  int power = 0;                   // k of 2^k
  std::int64_t explained = 0;      // error-bound failures on the scaled keys
  std::int64_t keys = 0;           // keys scaled by 2^power
  std::int64_t keys_with_evidence = 0;  // keys with a failure
  std::vector<bool> scaled_keys;   // per key
};

// The power of two that explains the most failures, found on keys with at least two pinned
// elements, then applied to every failing key whose interval holds it. Reported (explained > 0)
// only when it explains at least half of all the failures on keys.
scaling_verdict explain_by_power_of_two(const std::vector<key_scaling>& keys);

}  // namespace mqa::compare
