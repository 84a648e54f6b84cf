// Rounding a double onto the grid of a narrower binary format: the one integer algorithm behind
// every conversion in reference/fp8 (fp8, e2m1fn, float32 and bfloat16 results). Internal to the
// module; callers use convert.hpp and bfloat16.hpp.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "profile.hpp"

namespace mqa::fp8::detail {

inline constexpr int kDoubleMantissaBits = 52;

// |x| (finite, nonzero) rounded to nearest, ties to an even significand, on the grid of a binary
// format with `mantissa_bits` fraction bits whose exponent never goes below `min_exponent`.
// With e = max(exponent(x), min_exponent) the significand n = |x| * 2^(mantissa_bits - e) lands in
// [0, 2^(mantissa_bits + 1)]; the format's bits are ((e + bias - 1) << mantissa_bits) + n for
// fp8 and float32 alike: a carry out of the mantissa bumps the exponent field, and subnormals
// come out with exponent field 0. Integer arithmetic only: the thread's rounding mode never matters.
// A tie goes to the even significand, or (tie_rule::toward_zero) stays below.
struct on_grid {
  int exponent;
  std::uint64_t significand;
};

inline on_grid round_to_grid(double magnitude, int mantissa_bits, int min_exponent,
                             tie_rule ties = tie_rule::to_even) {
  const auto bits = std::bit_cast<std::uint64_t>(magnitude);
  const int biased = static_cast<int>(bits >> kDoubleMantissaBits);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << kDoubleMantissaBits) - 1);
  const int exponent = biased == 0 ? -1022 : biased - 1023;
  const std::uint64_t significand = biased == 0 ? fraction : fraction | (std::uint64_t{1} << kDoubleMantissaBits);

  const int e = std::max(exponent, min_exponent);
  const int shift = kDoubleMantissaBits - mantissa_bits + (e - exponent);  // >= 29
  std::uint64_t n = 0;
  if (shift < 54) {  // otherwise |x| is below half the smallest step: n rounds to 0
    n = significand >> shift;
    const std::uint64_t rest = significand & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    if (rest > half || (rest == half && ties == tie_rule::to_even && (n & 1))) ++n;
  }
  return {e, n};
}

}  // namespace mqa::fp8::detail
