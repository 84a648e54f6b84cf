// A slow, separate oracle for ml_dtypes' float -> fp8 rounding. It shares no code with
// reference/fp8: the values of the codes come from ml_dtypes itself (the golden decode tables
// in tests/data/golden/fp8), and the rounding decision is made the schoolbook way, by measuring
// the distance to the two neighbouring values. Special codes are written out per format here.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mqa::oracle {

struct candidate {
  double value;
  unsigned code;  // may be one past the largest finite code: the "overflow" neighbour
};

// What ml_dtypes writes for the special cases of one format.
struct specials {
  std::string name;
  bool is_signed;
  bool has_inf;            // e5m2
  bool negative_zero;      // e4m3fn and e5m2 have -0 = 0x80
  bool ties_up;            // e8m0: no mantissa, ties round up
  bool f32_subnormal_up;   // e8m0 from float32: (2^-127, 2^-126) -> 2^-126 (observed in ml_dtypes)
  unsigned nan;            // positive NaN code written
  unsigned inf;            // positive Inf code (has_inf only)
};

inline specials specials_of(const std::string& name) {
  if (name == "e4m3fn") return {name, true, false, true, false, false, 0x7F, 0};
  if (name == "e5m2") return {name, true, true, true, false, false, 0x7E, 0x7C};
  if (name == "e8m0fnu") return {name, false, false, false, true, true, 0xFF, 0};
  if (name == "e4m3fnuz" || name == "e5m2fnuz" || name == "e4m3b11fnuz")
    return {name, true, false, false, false, false, 0x80, 0};
  throw std::invalid_argument("oracle: unknown format " + name);
}

class nearest_code {
 public:
  // decoded_bits: float32 bits of the 256 codes as ml_dtypes decodes them.
  nearest_code(const std::string& name, const std::vector<std::uint32_t>& decoded_bits) : s_(specials_of(name)) {
    const unsigned limit = s_.is_signed ? 0x80 : 0x100;
    for (unsigned code = 0; code < limit; ++code) {
      const double v = std::bit_cast<float>(decoded_bits[code]);
      if (std::isfinite(v)) ladder_.push_back({v, code});
    }
    std::sort(ladder_.begin(), ladder_.end(), [](auto a, auto b) { return a.value < b.value; });
    const candidate top = ladder_.back(), below = ladder_[ladder_.size() - 2];
    // The value the format would have next: max plus the top binade's spacing, or, in a format of
    // bare powers of two (e8m0), twice max.
    const double next = s_.ties_up ? 2 * top.value : top.value + (top.value - below.value);
    ladder_.push_back({next, top.code + 1});
  }

  // Positive finite inputs must come in increasing order (a sweep): each call moves the cursor
  // along the ladder of values instead of searching.
  unsigned positive(float x) {
    if (s_.f32_subnormal_up && x < 0x1p-126f) return x > 0x1p-127f ? 0x01 : 0x00;
    const double v = x;
    while (cursor_ + 1 < ladder_.size() && ladder_[cursor_ + 1].value <= v) ++cursor_;
    candidate pick;
    if (v <= ladder_.front().value) {
      pick = ladder_.front();
    } else if (cursor_ + 1 == ladder_.size()) {
      pick = ladder_.back();
    } else {
      const candidate a = ladder_[cursor_], b = ladder_[cursor_ + 1];
      const double below = v - a.value, above = b.value - v;  // exact: nearby dyadic numbers
      if (below < above) pick = a;
      else if (above < below) pick = b;
      else pick = s_.ties_up ? b : (a.code % 2 == 0 ? a : b);
    }
    if (pick.code == ladder_.back().code) return s_.has_inf ? s_.inf : s_.nan;  // rounded past max
    return pick.code;
  }

  unsigned negative_of(unsigned positive_code) const {
    if (!s_.is_signed) return s_.nan;
    if (positive_code == 0) return s_.negative_zero ? 0x80 : 0x00;
    if (positive_code == s_.nan && s_.nan == 0x80) return 0x80;
    return positive_code | 0x80;
  }
  unsigned zero(bool negative) const {
    if (!s_.is_signed) return s_.nan;  // e8m0: zero is NaN in ml_dtypes
    return negative && s_.negative_zero ? 0x80 : 0x00;
  }
  unsigned infinity(bool negative) const {
    if (!s_.is_signed) return s_.nan;
    const unsigned code = s_.has_inf ? s_.inf : s_.nan;
    return negative ? negative_of(code) : code;
  }
  unsigned nan(bool negative) const { return negative ? negative_of(s_.nan) : s_.nan; }

 private:
  specials s_;
  std::vector<candidate> ladder_;
  std::size_t cursor_ = 0;
};

}  // namespace mqa::oracle
