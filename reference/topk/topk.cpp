#include "topk.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>

#include "reference/topk/narrow.hpp"

namespace mqa::topk {
namespace {

// The ranking as an unsigned order: the value's bits made monotone (negatives flipped, -0 as +0:
// they tie), every NaN above +inf. Ties go to the lower index (below).
std::uint32_t rank_key(float x) {
  if (std::isnan(x)) return 0xFFFFFFFFu;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x == 0.0f ? 0.0f : x);
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

// The k largest of `keys` (positions ascending; ties to the lower position): a radix select.
// The k-th largest key T is found digit by digit from the top. The first digit is counted over
// every key; the keys that share it are gathered, and the lower digits counted among them only.
// One ascending scan then keeps every key above T and the lowest-positioned ones equal to it.
void select_largest(std::span<const std::uint32_t> keys, std::int64_t k, std::vector<std::int64_t>& order) {
  constexpr std::array<int, 3> kShifts{21, 10, 0};  // digits of 11, 11 and 10 bits
  std::array<std::int64_t, 2048> counts{};
  thread_local std::vector<std::uint32_t> sharing;
  for (const std::uint32_t key : keys) ++counts[key >> kShifts[0]];
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
}

}  // namespace

// The comparator ranks every judged row twice (n = 65536, k = 2048 at production shapes), so a
// long row is first narrowed (narrow.hpp): a threshold read off a sample of its keys keeps, in one
// branch-free pass, a few thousand candidates that hold the top k whenever at least k of them pass
// it; the radix select then runs on those alone, and on the whole row when too few pass. Either
// way the same set comes out.
std::vector<std::int64_t> largest(std::span<const float> values, std::int64_t k) {
  k = std::clamp<std::int64_t>(k, 0, static_cast<std::int64_t>(values.size()));
  std::vector<std::int64_t> order;
  order.reserve(static_cast<std::size_t>(k));
  if (k == 0) return order;
  // Scratch kept per thread: a fresh 256 KiB vector per call (n = 65536) went through the
  // allocator and the kernel's page zeroing each time.
  thread_local std::vector<std::uint32_t> keys, candidate_keys, sample;
  thread_local std::vector<std::int64_t> candidates, chosen;
  const std::size_t n = values.size();
  keys.resize(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = rank_key(values[i]);

  if (const auto threshold =
          detail::sampled_threshold<std::uint32_t>(keys, static_cast<std::size_t>(k), sample)) {
    candidates.resize(n);
    std::size_t passed = 0;
    for (std::size_t i = 0; i < n; ++i) {
      candidates[passed] = static_cast<std::int64_t>(i);
      passed += keys[i] >= *threshold ? 1 : 0;
    }
    if (passed >= static_cast<std::size_t>(k) && passed <= n / 2) {
      candidate_keys.resize(passed);
      for (std::size_t c = 0; c < passed; ++c) candidate_keys[c] = keys[static_cast<std::size_t>(candidates[c])];
      chosen.clear();
      select_largest(candidate_keys, k, chosen);
      for (const std::int64_t c : chosen) order.push_back(candidates[static_cast<std::size_t>(c)]);
      return order;
    }
  }
  select_largest(keys, k, order);
  return order;
}

}  // namespace mqa::topk
