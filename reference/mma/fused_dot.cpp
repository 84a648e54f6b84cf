// The fused dot-add step and the chain of steps over a dot product (instruction.hpp). Every
// quantity is an integer times a power of two: terms are int64 significands scaled to a common
// unit, so the model itself rounds nothing except where the instruction does.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "reference/mma/instruction.hpp"

namespace mqa::mma {
namespace {

constexpr int kOperandFraction = 3;  // operand significands m * 2^-3: fp8 has at most 3 fraction bits
constexpr int kProductFraction = 2 * kOperandFraction;
constexpr int kNone = std::numeric_limits<int>::min() / 4;  // no nonzero term: below every exponent

// m * 2^shift as an integer, the bits shifted out rounded by the rule (shift < 0).
std::int64_t shifted(std::int64_t m, int shift, rounding r) {
  if (shift >= 0) return m * (std::int64_t{1} << shift);  // callers keep |m| 2^shift far below 2^63
  if (m == 0) return 0;
  const int k = -shift;
  if (k >= 62) {  // every bit goes: what is left is the rule's rounding of a tiny fraction
    if (r == rounding::down && m < 0) return -1;
    return 0;
  }
  const std::int64_t floor = m >> k;  // arithmetic shift (C++20): floor division by 2^k
  const std::int64_t rest = m - floor * (std::int64_t{1} << k);  // in [0, 2^k)
  switch (r) {
    case rounding::down: return floor;
    case rounding::toward_zero: return m < 0 && rest != 0 ? floor + 1 : floor;
    case rounding::nearest_even: {
      const std::int64_t half = std::int64_t{1} << (k - 1);
      return rest > half || (rest == half && (floor & 1) != 0) ? floor + 1 : floor;
    }
  }
  return floor;
}

// The float32 accumulator as M * 2^(e - 23), e its exponent (at least -126).
struct accumulator {
  std::int64_t m = 0;
  int e = kNone;
};
accumulator accumulator_of(float c) {
  if (c == 0) return {};
  const auto bits = std::bit_cast<std::uint32_t>(c);
  const auto field = static_cast<int>((bits >> 23) & 0xFF);
  const std::int64_t mantissa = (bits & 0x7FFFFF) | (field != 0 ? 0x800000 : 0);  // subnormal: no hidden bit
  return {(bits >> 31) ? -mantissa : mantissa, field != 0 ? field - 127 : -126};
}

// 2^e exactly, for e a double's normal exponent.
double power_of_two(int e) { return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52); }

int min_exponent(fp8::format f) { return 1 - fp8::traits(f).bias; }

// S * 2^unit rounded to float32 with `bits` fraction bits (subnormals below 2^-126 keep the unit of
// 2^-126), by the rule.
float round_result(std::int64_t s, int unit, int bits, rounding r) {
  if (s == 0) return 0.0f;
  const auto magnitude = static_cast<std::uint64_t>(s < 0 ? -s : s);
  const int e = std::max(static_cast<int>(std::bit_width(magnitude)) - 1 + unit, -126);  // floor(log2 |s 2^unit|)
  const std::int64_t q = shifted(s, unit - (e - bits), r);
  // Exact: q has at most bits + 1 <= 24 significant bits and e - bits >= -149.
  const double rounded = static_cast<double>(q) * power_of_two(e - bits);
  if (std::fabs(rounded) >= 0x1p128) return std::copysign(INFINITY, rounded);
  return static_cast<float>(rounded);
}

// Non-finite operands: what IEEE arithmetic makes of the exact sum (inf * 0 and +inf + -inf are NaN).
float nonfinite_result(float acc, std::span<const double> a, std::span<const double> b, std::uint32_t nan_bits) {
  double sum = acc;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  if (std::isnan(sum)) return std::bit_cast<float>(nan_bits);
  return static_cast<float>(sum);
}

// The sum of the nonzero products i in [first, end) by `stride`, each kept to `bits` fraction
// bits of their largest exponent; returns the sum in units of 2^(top - bits) and top (kNone: none).
std::pair<std::int64_t, int> aligned_products(std::span<const operand> a, std::span<const operand> b, std::size_t first,
                                              std::size_t stride, int bits, rounding r, int floor_exponent = kNone) {
  int top = floor_exponent;
  for (std::size_t i = first; i < a.size(); i += stride)
    if (a[i].m != 0 && b[i].m != 0) top = std::max(top, a[i].e + b[i].e);
  if (top == kNone) return {0, kNone};
  const int unit = top - bits;
  std::int64_t s = 0;
  // Truncation in 32 bits, without a branch per product (the model's inner loop: a sampled centre
  // runs it 2^34 times): the magnitude's floor with the sign put back. A nonzero product has
  // |m_a m_b| <= 15 * 15 < 2^8 and, as its exponent is at most top, a shift of at most bits - 6,
  // so it keeps fewer than 2^(bits + 2); `terms` of them stay below 2^31 when checked here. A zero
  // product adds 0 whatever its shift; the shifts are clamped only to keep them defined.
  static_assert(kProductFraction == 6);
  const std::size_t terms = a.size() > first ? (a.size() - first + stride - 1) / stride : 0;
  if (r == rounding::toward_zero && bits <= 21 && terms <= (std::size_t{1} << (29 - bits))) {
    std::int32_t sum = 0;
    for (std::size_t i = first; i < a.size(); i += stride) {
      const std::int32_t product = a[i].m * b[i].m;
      const int shift = a[i].e + b[i].e - kProductFraction - unit;
      const auto magnitude = static_cast<std::uint32_t>(product < 0 ? -product : product);
      const std::uint32_t kept = (magnitude << std::clamp(shift, 0, 23)) >> std::clamp(-shift, 0, 31);
      sum += product < 0 ? -static_cast<std::int32_t>(kept) : static_cast<std::int32_t>(kept);
    }
    return {sum, top};
  }
  for (std::size_t i = first; i < a.size(); i += stride)
    if (a[i].m != 0 && b[i].m != 0)
      s += shifted(static_cast<std::int64_t>(a[i].m) * b[i].m, a[i].e + b[i].e - kProductFraction - unit, r);
  return {s, top};
}

// NVIDIA: the accumulator joins the alignment of the products.
float aligned_sum(const fused_step& st, float acc, std::span<const operand> a, std::span<const operand> b) {
  const accumulator c = accumulator_of(acc);
  auto [s, top] = aligned_products(a, b, 0, 1, st.term_bits, st.term_rule, c.e);
  if (top == kNone) return 0.0f;
  const int unit = top - st.term_bits;
  if (c.m != 0) s += shifted(c.m, c.e - 23 - unit, st.term_rule);
  return round_result(s, unit, st.result_bits, st.result_rule);
}

// AMD CDNA3: even and odd products in lanes of their own, combined, then the accumulator apart.
float lane_sum(const fused_step& st, float acc, std::span<const operand> a, std::span<const operand> b) {
  const auto [even, even_top] = aligned_products(a, b, 0, 2, st.term_bits, st.term_rule);
  const auto [odd, odd_top] = aligned_products(a, b, 1, 2, st.term_bits, st.term_rule);
  const int product_top = std::max(even_top, odd_top);
  std::int64_t products = 0;  // units of 2^(product_top - lane_bits)
  if (even_top != kNone)
    products += shifted(even, (even_top - st.term_bits) - (product_top - st.lane_bits), st.lane_rule);
  if (odd_top != kNone)
    products += shifted(odd, (odd_top - st.term_bits) - (product_top - st.lane_bits), st.lane_rule);
  const accumulator c = accumulator_of(acc);
  const int top = std::max(product_top, c.e);
  if (top == kNone) return 0.0f;
  std::int64_t total = 0;  // units of 2^(top - sum_bits)
  if (product_top != kNone)
    total += shifted(products, (product_top - st.lane_bits) - (top - st.sum_bits), st.apart_rule);
  if (c.m != 0 && c.e >= top - st.accumulator_reach)
    total += shifted(c.m, (c.e - 23) - (top - st.accumulator_bits), st.apart_rule) *
             (std::int64_t{1} << (st.sum_bits - st.accumulator_bits));
  return round_result(total, top - st.sum_bits, st.result_bits, st.result_rule);
}

// The steps of one dot in ascending k from 0; with promotion, a fresh chain every promote_every
// elements whose result a float32 FADD adds into the promoted sum (DeepGEMM).
template <class Step>
float chained(const instruction& ins, std::size_t length, std::int64_t promote_every, Step step) {
  const auto g = static_cast<std::size_t>(ins.step.products);
  float chain = 0, promoted = 0;
  for (std::size_t k0 = 0; k0 < length; k0 += g) {
    chain = step(chain, k0, g);
    if (promote_every > 0 && (k0 + g) % static_cast<std::size_t>(promote_every) == 0) {
      promoted = promoted + chain;
      chain = 0;
    }
  }
  return promote_every > 0 ? promoted : chain;
}

bool all_finite(float acc, std::span<const double> a, std::span<const double> b) {
  bool finite = std::isfinite(acc);
  for (std::size_t i = 0; i < a.size(); ++i) finite = finite && std::isfinite(a[i]) && std::isfinite(b[i]);
  return finite;
}

}  // namespace

operand decompose(double v, fp8::format f) {
  // v is an fp8 value, so a normal double with at most 3 fraction bits: read its exponent and top
  // mantissa bits directly (this runs for every operand of every modelled dot).
  if (v == 0) return {};
  const auto bits = std::bit_cast<std::uint64_t>(v);
  const int exponent = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
  const auto mantissa = static_cast<std::int32_t>(((bits >> 49) & 0x7) | 0x8);  // 1.fff as fff + 8
  const std::int32_t sign = (bits >> 63) ? -1 : 1;
  const int min_e = min_exponent(f);
  if (exponent >= min_e) return {sign * mantissa, exponent};
  // A subnormal of its format: a smaller significand at the smallest normal exponent.
  return {sign * (mantissa >> (min_e - exponent)), min_e};
}

float fused_dot_add(const fused_step& st, float acc, std::span<const operand> a, std::span<const operand> b) {
  return st.even_odd_lanes ? lane_sum(st, acc, a, b) : aligned_sum(st, acc, a, b);
}

float fused_dot_add(const fused_step& st, float acc, std::span<const double> a, fp8::format fa,
                    std::span<const double> b, fp8::format fb, std::uint32_t nan_bits) {
  if (!all_finite(acc, a, b)) return nonfinite_result(acc, a, b, nan_bits);
  operand x[64], y[64];
  for (std::size_t i = 0; i < a.size(); ++i) x[i] = decompose(a[i], fa), y[i] = decompose(b[i], fb);
  return fused_dot_add(st, acc, std::span<const operand>(x, a.size()), std::span<const operand>(y, b.size()));
}

float dot(const instruction& ins, std::span<const operand> a, std::span<const operand> b, std::int64_t promote_every) {
  return chained(ins, a.size(), promote_every, [&](float acc, std::size_t k0, std::size_t g) {
    return fused_dot_add(ins.step, acc, a.subspan(k0, g), b.subspan(k0, g));
  });
}

float dot(const instruction& ins, std::span<const double> a, fp8::format fa, std::span<const double> b,
          fp8::format fb, std::int64_t promote_every) {
  return chained(ins, a.size(), promote_every, [&](float acc, std::size_t k0, std::size_t g) {
    return fused_dot_add(ins.step, acc, a.subspan(k0, g), fa, b.subspan(k0, g), fb, ins.nan_bits);
  });
}

}  // namespace mqa::mma
