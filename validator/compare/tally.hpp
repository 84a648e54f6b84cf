// One finding class as a part of the comparator sees it: how many elements, and the
// lexicographically first (i, j) with its values; parts merge into the whole's.
#pragma once

#include <bit>
#include <cstdint>
#include <utility>

namespace mqa::compare {

struct tally {
  std::int64_t count = 0;
  std::int64_t row = -1, col = -1;
  std::uint32_t expected = 0, actual = 0;
  double bound = 0;
  bool expected_known = true;  // finding::expected_known of the first element

  void add(std::int64_t i, std::int64_t j, float expected_value, float actual_value, double allowed,
           bool known = true) {
    if (count++ == 0 || std::pair(i, j) < std::pair(row, col)) {
      row = i;
      col = j;
      expected = std::bit_cast<std::uint32_t>(expected_value);
      actual = std::bit_cast<std::uint32_t>(actual_value);
      bound = allowed;
      expected_known = known;
    }
  }
  void merge(const tally& o) {
    if (o.count == 0) return;
    const std::int64_t total = count + o.count;
    if (count == 0 || std::pair(o.row, o.col) < std::pair(row, col)) *this = o;
    count = total;
  }
};

}  // namespace mqa::compare
