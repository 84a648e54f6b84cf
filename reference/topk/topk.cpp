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
// digit by digit from the top. The first digit is counted while the keys are made; the keys that
// share it (few, on real rows) are gathered, and the lower digits counted among them only. One
// ascending scan then keeps every key above T and the lowest-indexed ones equal to it.
std::vector<std::int64_t> largest(std::span<const float> values, std::int64_t k) {
  k = std::clamp<std::int64_t>(k, 0, static_cast<std::int64_t>(values.size()));
  std::vector<std::int64_t> order;
  order.reserve(static_cast<std::size_t>(k));
  if (k == 0) return order;
  constexpr std::array<int, 3> kShifts{21, 10, 0};  // digits of 11, 11 and 10 bits
  std::array<std::int64_t, 2048> counts{};
  // Scratch kept per thread: the comparator calls this twice per row from many threads, and a
  // fresh 256 KiB vector per call (n = 65536) went through the allocator and the kernel's page
  // zeroing each time.
  thread_local std::vector<std::uint32_t> keys, sharing;
  keys.resize(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    keys[i] = rank_key(values[i]);
    ++counts[keys[i] >> kShifts[0]];
  }
  std::uint32_t prefix = 0;  // the digits of T found so far
  std::int64_t rank = k;     // T's rank (from the top) among the keys sharing them
  auto choose_digit = [&](int shift, std::uint32_t digits) {
    for (std::uint32_t d = digits + 1; d-- > 0;) {
      if (rank <= counts[d]) {
        prefix |= d << shift;
        return;
      }
      rank -= counts[d];
    }
  };
  choose_digit(kShifts[0], 0x7FFu);
  sharing.clear();
  for (const std::uint32_t key : keys)
    if ((key >> kShifts[0]) == (prefix >> kShifts[0])) sharing.push_back(key);
  std::uint32_t known = 0x7FFu << kShifts[0];
  for (const int shift : {kShifts[1], kShifts[2]}) {
    const std::uint32_t digits = shift == 0 ? 0x3FFu : 0x7FFu;
    counts.fill(0);
    for (const std::uint32_t key : sharing)
      if ((key & known) == prefix) ++counts[(key >> shift) & digits];
    choose_digit(shift, digits);
    known |= digits << shift;
  }
  // prefix is T; `rank` keys equal to it belong to the top k.
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (keys[i] > prefix || (keys[i] == prefix && rank-- > 0)) order.push_back(static_cast<std::int64_t>(i));
  return order;
}

}  // namespace mqa::topk
