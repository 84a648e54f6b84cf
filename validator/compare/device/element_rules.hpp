// The comparator's rules for one element on the device, as the host states them: the ULP
// distance and the histograms' buckets (compare::ulp_distance, ulp_histogram, ulp_scales), the
// allowance (compare::allowance_at, in the order of allowance.cpp's lanes, which gives its bits;
// the file that includes this is built with -fmad=false so that none is fused), its packed forms
// in judge_args, and topk's ranks of a float and a double. Device code only; element_judge.hip
// includes it.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "reference/gpu/hip_compat.hpp"
#include "validator/compare/device/judge_args.hpp"

namespace mqa::compare::device {
namespace {  // private to element_judge.hip, the one file that includes this header

constexpr double kUp = 1 + 0x1p-50;  // allowance.cpp's upward rounding of a few products
constexpr int kExact = 1024, kPerOctave = 16;

__device__ std::uint32_t bits_of(float x) { return __float_as_uint(x); }
__device__ float float_of(std::uint32_t b) { return __uint_as_float(b); }
__device__ std::uint64_t bits_of(double x) { return static_cast<std::uint64_t>(__double_as_longlong(x)); }
__device__ double double_of(std::uint64_t b) { return __longlong_as_double(static_cast<long long>(b)); }

// compare::ulp_distance of two floats neither of which is a NaN (the only ones it is asked of):
// the difference of their orders, at most 2 * 0x7F800000, which 32 bits hold.
__device__ std::uint32_t ulp_distance(float a, float b) {
  const std::uint32_t x = bits_of(a), y = bits_of(b);
  const std::uint32_t mx = x & 0x7FFFFFFFu, my = y & 0x7FFFFFFFu;
  if ((x ^ y) >> 31) return mx + my;  // opposite signs: the orders are -mx and my (or mx and -my)
  return mx > my ? mx - my : my - mx;
}

// fp8::round_to_bfloat16 of a finite float: to nearest, ties to even.
__device__ float round_to_bfloat16(float x) {
  const std::uint32_t b = bits_of(x);
  const std::uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
  return float_of(rounded);
}

// compare::ulp_histogram's bucket of a distance: exact below kExact, then kPerOctave to an octave.
__device__ int bucket_of_octave(int octave, int sub) {
  const int b = kExact + (octave - 10) * kPerOctave + sub;
  return b < kUlpBuckets - 1 ? b : kUlpBuckets - 1;
}
__device__ int bucket_of(std::uint32_t ulps) {
  if (ulps < kExact) return static_cast<int>(ulps);
  const int octave = 31 - __clz(static_cast<int>(ulps));
  return bucket_of_octave(octave, static_cast<int>((ulps >> (octave - 4)) & (kPerOctave - 1)));
}
// The same of the integer a float64 holds (ceil's; +inf counts as any distance past the last
// bucket), read off its exponent and the fraction's leading bits without a conversion.
__device__ int bucket_of_integral(double units) {
  static_assert(kPerOctave == 16, "an octave's sixteenths are the fraction's four leading bits");
  if (units < kExact) return static_cast<int>(units);
  const std::uint64_t bits = bits_of(units);
  return bucket_of_octave(static_cast<int>(bits >> 52) - 1023, static_cast<int>((bits >> 48) & 15));
}

// compare::per_ulp_of_magnitude on the device: 1 / compare::ulp_of_magnitude, exactly (a power of
// two, at most 2^149), so an error times it rounds to the bits of the error divided by the ULP.
__device__ double reciprocal_ulp_of_magnitude(double magnitude, bool bfloat16) {
  const int stored = bfloat16 ? 7 : 23;
  const auto biased = static_cast<int>((bits_of(magnitude) >> 52) & 0x7FF);
  int e = biased - 1023;
  if (!(magnitude > 0) || biased == 0x7FF || e < -126) e = -126;
  return double_of(static_cast<std::uint64_t>(1023 - (e - stored)) << 52);
}

// compare::half_ulp.
__device__ double half_ulp(float x) {
  const std::uint32_t field = (bits_of(x) >> 23) & 0xFFu;
  if (field == 0xFFu) return 0;
  const int k = static_cast<int>(field < 1 ? 1 : field) - 151;
  return double_of(static_cast<std::uint64_t>(k + 1023) << 52);
}

__device__ double max_of(double a, double b) { return a < b ? b : a; }  // std::max(a, b)
__device__ double min_of(double a, double b) { return b < a ? b : a; }  // std::min(a, b)

// error_bound::largest_intermediate, as allowance.cpp's lanes evaluate it.
__device__ double largest_intermediate(const bound_constants& b, double magnitude, double unscaled,
                                       double scaled_weight_max, double scaled_dot_max) {
  const double grown = 1 + b.relative;
  double largest = magnitude * grown;
  switch (b.scale) {
    case bound_constants::placement::after_head_sum:
      largest = max_of(max_of(largest, unscaled * grown), scaled_weight_max * grown);
      break;
    case bound_constants::placement::into_weights: largest = max_of(largest, scaled_weight_max * grown); break;
    case bound_constants::placement::into_dots:
      largest = max_of(largest, scaled_dot_max * (1 + b.dot_relative) * (1 + 0x1p-7));
      break;
  }
  return largest * (1 + 0x1p-50);
}

struct allowance {
  double allowed;
  bool may_overflow;
};

// judge_args::allowances' form of an allowance: its bits, negated where an overflow is excused
// (-0 for an allowance of 0).
__device__ double allowance_code(const allowance& al) { return al.may_overflow ? -al.allowed : al.allowed; }
__device__ allowance allowance_of_code(double code) { return {fabs(code), static_cast<bool>(signbit(code))}; }

// judge_args::ulp_scales' form of an element's magnitude A against its exact logit.
__device__ std::uint16_t ulp_scale_code(double magnitude, float exact, bool bfloat16) {
  const auto field = static_cast<std::uint16_t>(bits_of(reciprocal_ulp_of_magnitude(magnitude, bfloat16)) >> 52);
  const bool conditioned = fabs(static_cast<double>(exact)) >= magnitude * (1.0 / 256);
  return static_cast<std::uint16_t>(field | (conditioned ? 0x8000u : 0u));
}
__device__ double reciprocal_ulp_of_code(std::uint16_t code) { return double_of(std::uint64_t{code & 0x7FFu} << 52); }
__device__ bool conditioned_of_code(std::uint16_t code) { return (code & 0x8000u) != 0; }

// compare::allowance_at, in the order of allowance.cpp's lanes (which give its bits).
__device__ allowance allowance_at(const judge_args& a, const row_entry& r, std::int64_t j, float expected,
                                  double magnitude_in) {
  const bound_constants& b = a.bound;
  if (b.bit_exact) return {0.0, false};
  const double s = a.scale_abs[j], kmax = a.k_max[j];
  const bool decided = isinf(magnitude_in);
  const double magnitude = decided ? 0.0 : magnitude_in;
  const double half = half_ulp(expected);
  const double expected_abs = fabs(static_cast<double>(expected));
  const bool finite = ((bits_of(expected) >> 23) & 0xFFu) != 0xFFu;
  const double value_abs = finite ? (expected_abs + half) * (1 + 0x1p-50) : 0.0;
  const double weights_abs = r.weights_abs * kUp, weighted_q_abs = r.weighted_q_abs * kUp;
  const double weight_term = b.per_weight * weights_abs, weighted_q_term = b.per_weighted_q * weighted_q_abs;
  const double dots_abs = r.q_abs * kmax * kUp;
  const double small_weight_dots_abs = r.small_weight_q_abs * kmax * kUp;
  double sum = b.relative * magnitude + b.per_scale * s;
  sum = sum + weight_term;
  sum = sum + b.per_dot * dots_abs;
  sum = sum + b.per_scaled_small_dot * s * small_weight_dots_abs;
  sum = sum + weighted_q_term;
  sum = sum + b.per_value * value_abs;
  sum = sum + b.absolute;
  const double allowed = sum * (1 + 0x1p-50) + half;
  bool overflow = expected_abs + allowed >= b.result_overflow;
  if (!(b.bit_exact || b.heads_exact)) {
    const double unscaled = r.weighted_q_abs * kmax * kUp;
    const double scaled_weight_max = s * r.weight_max * kUp;
    const double scaled_dot_max = s * r.q_head_max * kmax * kUp;
    if (largest_intermediate(b, magnitude, unscaled, scaled_weight_max, scaled_dot_max) >= b.overflow_threshold) {
      const double tighter = s > 0 ? min_of(unscaled, magnitude / s * kUp) : unscaled;
      overflow |= largest_intermediate(b, magnitude, tighter, scaled_weight_max, scaled_dot_max) >= b.overflow_threshold;
    }
  }
  return {allowed, overflow && !decided};
}

// topk's rank of a float: monotone unsigned, -0 as +0, every NaN above +inf.
__device__ std::uint32_t rank_key(float x) {
  if (isnan(x)) return 0xFFFFFFFFu;
  const std::uint32_t bits = bits_of(x == 0.0f ? 0.0f : x);
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

// A double's order as an unsigned integer (no NaN reaches it).
__device__ std::uint64_t order_key(double x) {
  const std::uint64_t bits = bits_of(x);
  return (bits >> 63) ? ~bits : bits | (std::uint64_t{1} << 63);
}
__device__ double from_order_key(std::uint64_t k) {
  return double_of((k >> 63) ? k & ~(std::uint64_t{1} << 63) : ~k);
}

}  // namespace
}  // namespace mqa::compare::device
