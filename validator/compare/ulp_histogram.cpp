#include "ulp_histogram.hpp"

#include <cmath>

namespace mqa::compare {

void ulp_histogram::merge(const ulp_histogram& o) {
  for (std::size_t b = 0; b < kBuckets; ++b) counts[b] += o.counts[b];
  total += o.total;
  max = std::max(max, o.max);
}

std::uint64_t ulp_histogram::percentile(double p) const {
  if (total == 0) return 0;
  const auto rank = static_cast<std::int64_t>(std::ceil(p * static_cast<double>(total)));
  std::int64_t seen = 0;
  for (std::size_t b = 0; b < kBuckets; ++b) {
    seen += counts[b];
    if (seen >= std::max<std::int64_t>(rank, 1)) {
      if (b < kExact) return b;
      const std::size_t octave = (b - kExact) / kPerOctave + 10, sub = (b - kExact) % kPerOctave;
      return (std::uint64_t{1} << octave) + (static_cast<std::uint64_t>(sub) << (octave - 4));
    }
  }
  return max;
}

std::array<std::int64_t, 32> ulp_histogram::octaves() const {
  std::array<std::int64_t, 32> out{};
  for (std::size_t b = 0; b < kBuckets; ++b) {
    std::size_t index;
    if (b < kExact) index = b == 0 ? 0 : static_cast<std::size_t>(std::bit_width(b));
    else index = (b - kExact) / kPerOctave + 11;
    out[std::min<std::size_t>(index, 31)] += counts[b];
  }
  return out;
}

}  // namespace mqa::compare
