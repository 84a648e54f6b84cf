// A distribution of ULP distances, cheap to add to (the comparator adds every compared pair) and to
// merge (threads and row blocks each keep their own).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mqa::compare {

// ULP distances: exact below 1024, then 16 buckets per power of two (percentiles above 1024
// are reported as the lower edge of their bucket).
struct ulp_histogram {
  static constexpr std::size_t kExact = 1024, kPerOctave = 16, kBuckets = kExact + 23 * kPerOctave;
  std::vector<std::int64_t> counts = std::vector<std::int64_t>(kBuckets, 0);
  std::int64_t total = 0;
  std::uint64_t max = 0;

  // Inline: the comparator adds every compared pair.
  void add(std::uint64_t ulps) {
    ++total;
    max = ulps > max ? ulps : max;
    std::size_t bucket;
    if (ulps < kExact) {
      bucket = ulps;
    } else {
      const int octave = std::bit_width(ulps) - 1;  // >= 10
      const auto sub = static_cast<std::size_t>((ulps >> (octave - 4)) & (kPerOctave - 1));
      bucket = std::min(kExact + static_cast<std::size_t>(octave - 10) * kPerOctave + sub, kBuckets - 1);
    }
    ++counts[bucket];
  }
  void merge(const ulp_histogram& other);
  std::uint64_t percentile(double p) const;  // p in [0, 1]
  // Coarse view for reports: counts of 0, 1, 2-3, 4-7, ... 2^30+.
  std::array<std::int64_t, 32> octaves() const;
};

}  // namespace mqa::compare
