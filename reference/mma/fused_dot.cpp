// The fused dot-add step and the chain of steps over a dot product (instruction.hpp). Every
// quantity is an integer times a power of two: terms are kept as int64 significands scaled to a
// common unit, so the model itself rounds nothing except where the instruction does.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "reference/mma/instruction.hpp"

namespace mqa::mma {
namespace {

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

// A nonzero finite value as m * 2^(e - frac) with e its exponent in the sense of the header: the
// float exponent, or the smallest normal exponent of its format for subnormals.
struct term {
  std::int64_t m = 0;
  int e = 0, frac = 0;
};

term operand_term(double v, int min_exponent) {
  // v is an fp8 value, so a normal double with at most 3 fraction bits: read its exponent and top
  // mantissa bits directly (this runs for every product of every modelled dot).
  const auto bits = std::bit_cast<std::uint64_t>(v);
  const int exponent = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
  const auto mantissa = static_cast<std::int64_t>(((bits >> 49) & 0x7) | 0x8);  // 1.fff as fff + 8
  const std::int64_t sign = (bits >> 63) ? -1 : 1;
  if (exponent >= min_exponent) return {sign * mantissa, exponent, 3};
  // A subnormal of its format: a smaller significand at the smallest normal exponent.
  return {sign * (mantissa >> (min_exponent - exponent)), min_exponent, 3};
}

term product_term(double a, int min_a, double b, int min_b) {
  const term x = operand_term(a, min_a), y = operand_term(b, min_b);
  return {x.m * y.m, x.e + y.e, 6};
}

term accumulator_term(float c) {
  const int e = std::max(std::ilogb(c), -126);
  return {static_cast<std::int64_t>(std::ldexp(static_cast<double>(c), 23 - e)), e, 23};
}

int min_exponent(fp8::format f) { return 1 - fp8::traits(f).bias; }

// S * 2^unit rounded to float32 with `bits` fraction bits (subnormals below 2^-126 keep the unit of
// 2^-126), by the rule.
float round_result(std::int64_t s, int unit, int bits, rounding r) {
  if (s == 0) return 0.0f;
  const double v = std::ldexp(static_cast<double>(s), unit);  // exact: |s| < 2^53
  const int e = std::max(std::ilogb(v), -126);
  const std::int64_t q = shifted(s, unit - (e - bits), r);
  const double rounded = std::ldexp(static_cast<double>(q), e - bits);
  if (std::fabs(rounded) >= 0x1p128) return std::copysign(INFINITY, rounded);
  return static_cast<float>(rounded);  // exact: q has at most bits + 1 <= 24 significant bits
}

// Non-finite operands: what IEEE arithmetic makes of the exact sum (inf * 0 and +inf + -inf are NaN).
float nonfinite_result(float acc, std::span<const double> a, std::span<const double> b, std::uint32_t nan_bits) {
  double sum = acc;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  if (std::isnan(sum)) return std::bit_cast<float>(nan_bits);
  return static_cast<float>(sum);
}

// NVIDIA: the accumulator joins the alignment of the products.
float aligned_sum(const fused_step& st, float acc, std::span<const double> a, int min_a, std::span<const double> b,
                  int min_b) {
  term terms[65];
  int count = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != 0 && b[i] != 0) terms[count++] = product_term(a[i], min_a, b[i], min_b);
  if (acc != 0) terms[count++] = accumulator_term(acc);
  if (count == 0) return 0.0f;
  int e_max = terms[0].e;
  for (int t = 1; t < count; ++t) e_max = std::max(e_max, terms[t].e);
  const int unit = e_max - st.term_bits;
  std::int64_t s = 0;
  for (int t = 0; t < count; ++t) s += shifted(terms[t].m, terms[t].e - terms[t].frac - unit, st.term_rule);
  return round_result(s, unit, st.result_bits, st.result_rule);
}

// AMD CDNA3: even and odd products in lanes of their own, combined, then the accumulator apart.
float lane_sum(const fused_step& st, float acc, std::span<const double> a, int min_a, std::span<const double> b,
               int min_b) {
  constexpr int kNone = std::numeric_limits<int>::min() / 4;  // no nonzero term: below every exponent
  std::int64_t lane_sum[2] = {0, 0};
  int lane_exp[2] = {kNone, kNone};
  term terms[64];
  for (int lane = 0; lane < 2; ++lane) {
    int count = 0;
    for (std::size_t i = static_cast<std::size_t>(lane); i < a.size(); i += 2)
      if (a[i] != 0 && b[i] != 0) terms[count++] = product_term(a[i], min_a, b[i], min_b);
    for (int t = 0; t < count; ++t) lane_exp[lane] = std::max(lane_exp[lane], terms[t].e);
    for (int t = 0; t < count; ++t)
      lane_sum[lane] += shifted(terms[t].m, terms[t].e - terms[t].frac - (lane_exp[lane] - st.term_bits), st.term_rule);
  }
  const int product_exp = std::max(lane_exp[0], lane_exp[1]);
  std::int64_t products = 0;  // units of 2^(product_exp - lane_bits)
  for (int lane = 0; lane < 2; ++lane)
    if (lane_exp[lane] != kNone)
      products += shifted(lane_sum[lane], (lane_exp[lane] - st.term_bits) - (product_exp - st.lane_bits), st.lane_rule);
  const bool has_acc = acc != 0;
  if (product_exp == kNone && !has_acc) return 0.0f;
  const term c = has_acc ? accumulator_term(acc) : term{};
  const int top = std::max(product_exp, has_acc ? c.e : kNone);
  std::int64_t total = 0;  // units of 2^(top - sum_bits)
  if (product_exp != kNone)
    total += shifted(products, (product_exp - st.lane_bits) - (top - st.sum_bits), st.apart_rule);
  if (has_acc && c.e >= top - st.accumulator_reach)
    total += shifted(c.m, (c.e - c.frac) - (top - st.accumulator_bits), st.apart_rule) *
             (std::int64_t{1} << (st.sum_bits - st.accumulator_bits));
  return round_result(total, top - st.sum_bits, st.result_bits, st.result_rule);
}

}  // namespace

float fused_dot_add(const fused_step& st, float acc, std::span<const double> a, fp8::format fa,
                    std::span<const double> b, fp8::format fb, std::uint32_t nan_bits) {
  bool finite = std::isfinite(acc);
  for (std::size_t i = 0; i < a.size(); ++i) finite = finite && std::isfinite(a[i]) && std::isfinite(b[i]);
  if (!finite) return nonfinite_result(acc, a, b, nan_bits);
  return st.even_odd_lanes ? lane_sum(st, acc, a, min_exponent(fa), b, min_exponent(fb))
                           : aligned_sum(st, acc, a, min_exponent(fa), b, min_exponent(fb));
}

float dot(const instruction& ins, std::span<const double> a, fp8::format fa, std::span<const double> b,
          fp8::format fb, std::int64_t promote_every) {
  const auto g = static_cast<std::size_t>(ins.step.products);
  float chain = 0, promoted = 0;
  for (std::size_t k0 = 0; k0 < a.size(); k0 += g) {
    chain = fused_dot_add(ins.step, chain, a.subspan(k0, g), fa, b.subspan(k0, g), fb, ins.nan_bits);
    if (promote_every > 0 && (k0 + g) % static_cast<std::size_t>(promote_every) == 0) {
      promoted = promoted + chain;  // DeepGEMM: a float32 FADD of each MMA chain into the promoted sum
      chain = 0;
    }
  }
  return promote_every > 0 ? promoted : chain;
}

}  // namespace mqa::mma
