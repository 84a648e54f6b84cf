#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "oracle/admissible_sets.hpp"
#include "reference/topk/decidedness.hpp"

using namespace mqa::topk;
namespace oracle = mqa::test::topk_oracle;

TEST_CASE("decidedness agrees with every admissible k-subset enumerated, on small rows with ties", "[topk][decidedness]") {
  std::mt19937_64 rng(20261203);
  std::int64_t keys_checked = 0, ambiguous_seen = 0, decided_seen = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int w = 1 + static_cast<int>(rng() % 10);
    const int k = static_cast<int>(rng() % 12);  // above w too: every key kept
    // Values on a coarse grid and bounds of a few sizes: ties between ends are common.
    std::vector<interval> keys;
    std::vector<oracle::key_interval> plain;
    for (int j = 0; j < w; ++j) {
      const double x = static_cast<double>(static_cast<int>(rng() % 9) - 4);
      const double bounds[] = {0.0, 0.5, 1.0, 2.0, INFINITY};
      const double b = bounds[rng() % (trial % 4 == 0 ? 5 : 4)];
      const bool nan = rng() % 23 == 0, inf = !nan && rng() % 23 == 0;
      keys.push_back(interval_of(nan ? NAN : inf ? INFINITY : x, b));
      // The oracle's own reading of the ranking rule: NaN at the top whatever its bound (NaN is
      // promised), +inf a point below it and above every number the grid holds, an infinite bound
      // any value but NaN (from -inf up to +inf).
      const double v = nan ? INFINITY : inf ? 1e300 : x;
      plain.push_back(nan             ? oracle::key_interval{v, v}
                      : std::isinf(b) ? oracle::key_interval{-INFINITY, 1e300}
                      : inf           ? oracle::key_interval{v, v}
                                      : oracle::key_interval{v - b, v + b});
    }
    std::vector<key_status> status;
    const row_decidedness d = decide(keys, k, &status);
    const std::vector<oracle::status> expected = oracle::statuses(plain, k);
    CAPTURE(trial, w, k);
    for (int j = 0; j < w; ++j) {
      CAPTURE(j, keys[static_cast<std::size_t>(j)].lower, keys[static_cast<std::size_t>(j)].upper);
      const oracle::status e = expected[static_cast<std::size_t>(j)];
      const key_status s = status[static_cast<std::size_t>(j)];
      CHECK((e == oracle::status::always) == (s == key_status::must_keep));
      CHECK((e == oracle::status::never) == (s == key_status::must_drop));
      ++keys_checked;
      (s == key_status::ambiguous ? ambiguous_seen : decided_seen) += 1;
    }
    CHECK(d.must_keep + d.must_drop + d.ambiguous == w);
    CHECK(d.k == std::min(k, w));
  }
  // The rows drawn exercise both outcomes, not one.
  CHECK(ambiguous_seen > keys_checked / 10);
  CHECK(decided_seen > keys_checked / 10);
}

// Long rows, which decide() narrows by a sample before it selects its two thresholds, against the
// theorem's counts themselves: a key is kept by every admissible set when at least w - k' upper
// ends lie strictly below its lower end, and by none when at least k' lower ends lie strictly above
// its upper end (each count a binary search in the sorted ends).
TEST_CASE("decidedness of long rows agrees with the theorem's counts", "[topk][decidedness]") {
  std::mt19937_64 rng(20261204);
  const std::int64_t w = GENERATE(4096, 5000, 65536);
  const std::int64_t k = GENERATE(1, 64, 2048, 8191);
  const int spread = GENERATE(0, 1, 2);  // continuous values; a coarse grid (ties); one value (all tie)
  std::normal_distribution<double> normal;
  std::vector<interval> keys;
  for (std::int64_t j = 0; j < w; ++j) {
    const double x = spread == 0 ? normal(rng) : spread == 1 ? std::round(normal(rng) * 4) / 4 : 1.0;
    const double b = rng() % 101 == 0 ? INFINITY : std::ldexp(1.0, -static_cast<int>(rng() % 12));
    keys.push_back(interval_of(rng() % 997 == 0 ? INFINITY : x, b));
  }
  std::vector<double> uppers, lowers;
  for (const interval& i : keys) uppers.push_back(i.upper), lowers.push_back(i.lower);
  std::sort(uppers.begin(), uppers.end());
  std::sort(lowers.begin(), lowers.end());
  const std::int64_t kept = std::min(k, w);
  std::vector<key_status> status;
  const row_decidedness d = decide(keys, k, &status);
  CAPTURE(w, k, spread);
  std::int64_t mismatches = 0, keep = 0, drop = 0;
  for (std::size_t j = 0; j < keys.size(); ++j) {
    const auto below = std::lower_bound(uppers.begin(), uppers.end(), keys[j].lower) - uppers.begin();
    const auto above = lowers.end() - std::upper_bound(lowers.begin(), lowers.end(), keys[j].upper);
    const bool must_keep = below >= w - kept, must_drop = !must_keep && above >= kept;
    keep += must_keep, drop += must_drop;
    mismatches += (status[j] == key_status::must_keep) != must_keep || (status[j] == key_status::must_drop) != must_drop;
  }
  CHECK(mismatches == 0);
  CHECK(d.must_keep == keep);
  CHECK(d.must_drop == drop);
  CHECK(d.ambiguous == w - keep - drop);
}

TEST_CASE("decidedness: separated values are decided, overlapping ones ambiguous, k clamps", "[topk][decidedness]") {
  const std::vector<interval> keys{interval_of(10, 1), interval_of(5, 1), interval_of(4.5, 1), interval_of(0, 1)};
  std::vector<key_status> s;
  const row_decidedness d = decide(keys, 2, &s);
  CHECK(s == std::vector<key_status>{key_status::must_keep, key_status::ambiguous, key_status::ambiguous,
                                     key_status::must_drop});
  CHECK(d.ambiguous == 2);
  CHECK(decide(keys, 4).must_keep == 4);
  CHECK(decide(keys, 9).must_keep == 4);
  CHECK(decide(keys, 0).must_drop == 4);
  // NaN ranks highest: kept by every admissible top-1.
  CHECK(decide(std::vector<interval>{interval_of(NAN, 0), interval_of(1e30, 1)}, 1).must_keep == 1);
  // Strictly above +inf, as torch.topk ranks it: the top-1 of NaN and +inf is decided.
  std::vector<key_status> nan_inf;
  const row_decidedness top1 = decide(std::vector<interval>{interval_of(INFINITY, 0.5), interval_of(NAN, 0.5)}, 1, &nan_inf);
  CHECK(nan_inf == std::vector<key_status>{key_status::must_drop, key_status::must_keep});
  CHECK(top1.fully_decided());
  CHECK(interval_of(INFINITY, 2).upper < interval_of(NAN, 2).lower);
  CHECK(interval_of(3e38, 1e30).upper < interval_of(INFINITY, 1e30).lower);
  CHECK(interval_of(-INFINITY, 1).upper == -INFINITY);
}

TEST_CASE("the decidedness summary: fully decided rows, median and worst row", "[topk][decidedness]") {
  auto row = [](std::int64_t ambiguous) {
    row_decidedness d;
    d.window = 10, d.k = 4, d.ambiguous = ambiguous, d.must_keep = 4 - ambiguous / 2, d.must_drop = 10 - d.must_keep - ambiguous;
    return d;
  };
  const decidedness_summary s = summarise({{7, row(0)}, {2, row(4)}, {5, row(2)}, {9, row(4)}});
  CHECK(s.rows == 4);
  CHECK(s.rows_fully_decided == 1);
  CHECK(s.median_ambiguous == 3.0);
  CHECK(s.worst_row == 2);  // the lower of the two rows with 4
  CHECK(s.worst_ambiguous == 4);
  CHECK(s.rows_ranked == 4);  // windows of 10, k = 4
  CHECK(s.median_ambiguous_ranked == 3.0);
  row_decidedness whole;  // a window of 3 at k = 4: every key kept, not a selection
  whole.window = 3, whole.k = 3, whole.must_keep = 3;
  const decidedness_summary t = summarise({{0, whole}, {1, row(2)}});
  CHECK(t.rows == 2);
  CHECK(t.rows_ranked == 1);
  CHECK(t.rows_ranked_fully_decided == 0);
  CHECK(t.median_ambiguous == 1.0);
  CHECK(t.median_ambiguous_ranked == 2.0);
  CHECK(summarise({}).rows == 0);
}
