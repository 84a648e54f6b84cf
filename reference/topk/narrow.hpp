// Narrowing a long row before a selection near its top (largest() in topk.cpp, the decidedness's
// thresholds in decidedness.cpp): a threshold read off a sample of every step-th value, the
// sample's value of rank 1.5 r / step + 6 from the top, so that about 1.5 r + 6 step values are at
// or above it. Where at least r values pass it, the r-th largest is among them, and so is every
// value above it: a selection over those few thousand gives what one over the whole row gives.
// Where fewer pass (ties, or a sample that missed) the caller selects over the whole row.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace mqa::topk::detail {

// The threshold for the r-th largest of `values` (1 <= r), or nullopt for a row too short, or r
// too near its length, for narrowing to pay. `sample` is the caller's scratch. T must be totally
// ordered by < (no NaN).
template <class T>
std::optional<T> sampled_threshold(std::span<const T> values, std::size_t r, std::vector<T>& sample) {
  constexpr std::size_t kSample = 512;
  const std::size_t n = values.size();
  if (n < 8 * kSample || r * 4 > n) return std::nullopt;
  const std::size_t step = n / kSample;
  sample.clear();
  for (std::size_t i = 0; i < n; i += step) sample.push_back(values[i]);
  const std::size_t rank = std::min(sample.size(), r * 3 / (2 * step) + 6);
  std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(rank - 1), sample.end(),
                   std::greater<>());
  return sample[rank - 1];
}

}  // namespace mqa::topk::detail
