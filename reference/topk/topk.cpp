#include "topk.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>

namespace mqa::topk {
namespace {

// A key whose unsigned order is the ranking: the value's bits made monotone (negatives flipped,
// -0 as +0: they tie), every NaN above +inf, then the complemented index (ties go to the lower
// index). One integer comparison per step instead of a comparator that tests for NaN.
std::uint64_t rank_key(float x, std::int64_t index) {
  std::uint32_t bits = std::isnan(x) ? 0xFFFFFFFFu : std::bit_cast<std::uint32_t>(x == 0.0f ? 0.0f : x);
  if (!std::isnan(x)) bits = (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
  return (static_cast<std::uint64_t>(bits) << 32) | (0xFFFFFFFFu - static_cast<std::uint32_t>(index));
}

}  // namespace

std::vector<std::int64_t> largest(std::span<const float> values, std::int64_t k) {
  k = std::clamp<std::int64_t>(k, 0, static_cast<std::int64_t>(values.size()));
  std::vector<std::uint64_t> keys(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) keys[i] = rank_key(values[i], static_cast<std::int64_t>(i));
  std::nth_element(keys.begin(), keys.begin() + k, keys.end(), std::greater<>());
  std::vector<std::int64_t> order(static_cast<std::size_t>(k));
  for (std::int64_t t = 0; t < k; ++t)
    order[static_cast<std::size_t>(t)] = 0xFFFFFFFFu - static_cast<std::uint32_t>(keys[static_cast<std::size_t>(t)]);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace mqa::topk
