// The scales an element's error is counted in, beside the raw ULP distance to the exact value.
//
// A logit is a head sum of relu terms weighted with both signs: the exact value can sit near zero
// while its terms are large, and one rounding of a term is then billions of ULPs of the result.
// Raw ULPs measure that conditioning, not the kernel. Two condition-free figures are kept too:
//   - magnitude ULPs: |output - exact| / ulp(A), A the element's magnitude
//     (|k_scale| sum_h |w_h| |dot_h|, the scale every error bound in reference/bounds is built on);
//   - conditioned ULPs: raw ULPs over the elements with |exact| >= A * 2^-kConditionLog2 only.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>

#include "validator/compare/ulp_histogram.hpp"

namespace mqa::compare {

// An element is well conditioned when |exact| >= A * 2^-8: cancellation (and relu zeroing terms
// A still counts) lost at most 8 bits, so a kernel error of k ULPs of A shows as at most about
// k * 2^9 raw ULPs there (2^8, and 2 for the binades of A and of the value). 8 keeps most elements
// (86% to 99% on generated 64-head cases) and drops those where the head sum cancels to within
// 1/256 of its terms, where raw ULPs grow without bound as the exact value nears 0.
inline constexpr int kConditionLog2 = 8;

inline bool well_conditioned(double exact, double magnitude) {
  return std::fabs(exact) >= magnitude * (1.0 / (1 << kConditionLog2));
}

// The output format's ULP at the magnitude A is 2^(e - p) with 2^e <= A < 2^(e+1) and p the
// significand's stored bits (23 for float32, 7 for bfloat16); below the normal range (both formats
// share float32's exponent), the subnormal spacing. Its exponent e - p, read from the double's
// exponent field (no libm call: the comparator computes it per element).
inline int ulp_exponent_of_magnitude(double magnitude, bool bfloat16) {
  const int stored = bfloat16 ? 7 : 23;
  const auto biased = static_cast<int>((std::bit_cast<std::uint64_t>(magnitude) >> 52) & 0x7FF);
  int e = biased - 1023;  // floor(log2 A) for a normal double; 0 and double subnormals clamp below
  if (!(magnitude > 0) || biased == 0x7FF || e < -126) e = -126;
  return e - stored;
}

inline double ulp_of_magnitude(double magnitude, bool bfloat16) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(ulp_exponent_of_magnitude(magnitude, bfloat16) + 1023) << 52);
}

// 1 / ulp_of_magnitude(A): a power of two (2^-1016 .. 2^149), so an error times it is the error
// divided by the ULP, rounded once as the division rounds it: the same double, without a division.
inline double per_ulp_of_magnitude(double magnitude, bool bfloat16) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(1023 - ulp_exponent_of_magnitude(magnitude, bfloat16)) << 52);
}

// Fractional ULPs (an error is often below one ULP of A), kept at 2^-kFractionBits ULP in the ULP
// histogram: exact below 1024 units (4 ULPs), then 16 buckets per power of two as there.
struct fractional_ulp_histogram {
  static constexpr int kFractionBits = 8;
  ulp_histogram units;

  void add(double ulps) {
    const double scaled = std::ceil(ulps * (1 << kFractionBits));  // never rounds an error down to 0
    constexpr double kCap = 0x1p62;                                     // an unbounded error stays counted
    units.add(!(scaled < kCap) ? static_cast<std::uint64_t>(kCap) : static_cast<std::uint64_t>(scaled));
  }
  void merge(const fractional_ulp_histogram& other) { units.merge(other.units); }
  std::int64_t total() const { return units.total; }
  std::optional<double> max() const;
  std::optional<double> percentile(double p) const;  // p in [0, 1]; a bucket's lower edge above 4 ULPs
  // Counts of 0, then [2^(k-1), 2^k) units of 2^-kFractionBits ULP in entry k (2^30 units and more last).
  std::array<std::int64_t, 32> octaves() const { return units.octaves(); }
};

// What the comparator gathers for the two scales.
struct scaled_ulps {
  fractional_ulp_histogram magnitude;  // over every compared pair
  ulp_histogram conditioned;           // raw ULPs over the well-conditioned compared pairs

  void merge(const scaled_ulps& other) {
    magnitude.merge(other.magnitude);
    conditioned.merge(other.conditioned);
  }
};

}  // namespace mqa::compare
