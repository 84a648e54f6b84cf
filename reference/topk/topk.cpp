#include "topk.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

namespace mqa::topk {
namespace {

// The ranking as an unsigned order: the value's bits made monotone (negatives flipped, -0 as +0:
// they tie), every NaN above +inf. Ties go to the lower index (below).
std::uint32_t rank_key(float x) {
  if (std::isnan(x)) return 0xFFFFFFFFu;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x == 0.0f ? 0.0f : x);
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

}  // namespace

// A radix select (the comparator ranks every judged row twice: nth_element on 64-bit keys and a
// sort of the result cost more than the rest of the row's judging): the k-th largest key T found
// digit by digit from the top, each pass counting only keys that share the digits found so far;
// then one ascending scan keeps every key above T and the lowest-indexed ones equal to it.
std::vector<std::int64_t> largest(std::span<const float> values, std::int64_t k) {
  k = std::clamp<std::int64_t>(k, 0, static_cast<std::int64_t>(values.size()));
  std::vector<std::int64_t> order;
  order.reserve(static_cast<std::size_t>(k));
  if (k == 0) return order;
  std::vector<std::uint32_t> keys(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) keys[i] = rank_key(values[i]);
  constexpr std::array<int, 3> kShifts{21, 10, 0};  // digits of 11, 11 and 10 bits
  std::uint32_t prefix = 0, known = 0;             // the digits of T found, and their bits
  std::int64_t rank = k;                           // T's rank (from the top) among keys with that prefix
  std::array<std::int64_t, 2048> counts;
  for (const int shift : kShifts) {
    const std::uint32_t digits = shift == 0 ? 0x3FFu : 0x7FFu;
    counts.fill(0);
    for (const std::uint32_t key : keys)
      if ((key & known) == prefix) ++counts[(key >> shift) & digits];
    for (std::uint32_t d = digits + 1; d-- > 0;) {
      if (rank <= counts[d]) {
        prefix |= d << shift;
        break;
      }
      rank -= counts[d];
    }
    known |= digits << shift;
  }
  // prefix is T; `rank` keys equal to it belong to the top k.
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (keys[i] > prefix || (keys[i] == prefix && rank-- > 0)) order.push_back(static_cast<std::int64_t>(i));
  return order;
}

}  // namespace mqa::topk
