// A slow, plain oracle of the fused dot-add steps, written from the prose of
// reference/mma/instruction.hpp with Boost rationals: every quantity is an exact rational, every
// rounding a division and a rounding of the quotient. It shares no code with reference/mma (no
// bit tricks, no integer scaling), so agreement is evidence, not an echo.
#pragma once

#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <optional>
#include <vector>

namespace mqa::mma_oracle {

using boost::multiprecision::cpp_int;
using boost::multiprecision::cpp_rational;

inline cpp_rational power_of_two(int e) {
  return e >= 0 ? cpp_rational(cpp_int(1) << e) : cpp_rational(cpp_int(1), cpp_int(1) << -e);
}

inline cpp_rational exact(double v) {
  int e = 0;
  const double f = std::frexp(v, &e);  // v = f 2^e, f has at most 53 bits
  return cpp_rational(static_cast<long long>(std::ldexp(f, 53))) * power_of_two(e - 53);
}

// floor(log2 |v|), at least `floor_exponent` (the smallest normal exponent of v's format).
inline int exponent_of(double v, int floor_exponent) {
  int e = 0;
  std::frexp(v, &e);
  return std::max(e - 1, floor_exponent);
}

enum class rule { toward_zero, down, nearest_even };

// The integer q nearest x by the rule.
inline cpp_int round_rational(const cpp_rational& x, rule r) {
  const cpp_int num = boost::multiprecision::numerator(x), den = boost::multiprecision::denominator(x);
  cpp_int q = num / den;  // toward zero
  const cpp_int rest = num - q * den;
  if (r == rule::toward_zero || rest == 0) return q;
  if (r == rule::down) return num < 0 ? cpp_int(q - 1) : q;
  // nearest, ties to even: compare 2 |rest| with den
  const cpp_int twice = 2 * (rest < 0 ? cpp_int(-rest) : rest);
  const bool up = twice > den || (twice == den && (q % 2 != 0));
  if (!up) return q;
  return num < 0 ? cpp_int(q - 1) : cpp_int(q + 1);
}

// x rounded to `bits` fraction bits at its own exponent (floored at -126), as a float.
inline float round_to_float(const cpp_rational& x, int bits, rule r) {
  if (x == 0) return 0.0f;
  const cpp_rational a = x < 0 ? cpp_rational(-x) : x;
  int e = 0;  // floor(log2 a)
  while (power_of_two(e + 1) <= a) ++e;
  while (power_of_two(e) > a) --e;
  e = std::max(e, -126);
  const cpp_rational quantum = power_of_two(e - bits);
  const cpp_int q = round_rational(x / quantum, r);
  const cpp_rational y = cpp_rational(q) * quantum;
  const double d = static_cast<double>(boost::multiprecision::numerator(y)) /
                   static_cast<double>(boost::multiprecision::denominator(y));
  return static_cast<float>(d);
}

struct weighted {
  cpp_rational value;
  int exponent;
};

// Sum of the terms, each rounded to `bits` fraction bits of the largest exponent among them.
inline std::pair<cpp_rational, int> aligned(const std::vector<weighted>& terms, int bits, rule r) {
  if (terms.empty()) return {cpp_rational(0), -100000};
  int top = terms.front().exponent;
  for (const auto& t : terms) top = std::max(top, t.exponent);
  const cpp_rational quantum = power_of_two(top - bits);
  cpp_rational sum = 0;
  for (const auto& t : terms) sum += cpp_rational(round_rational(t.value / quantum, r)) * quantum;
  return {sum, top};
}

// Hopper wgmma fp8: products and accumulator aligned together, 13 bits truncated, result truncated to 13.
inline float sm90_step(float acc, const std::vector<double>& a, int min_a, const std::vector<double>& b, int min_b) {
  std::vector<weighted> terms;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != 0 && b[i] != 0)
      terms.push_back({exact(a[i]) * exact(b[i]), exponent_of(a[i], min_a) + exponent_of(b[i], min_b)});
  if (acc != 0) terms.push_back({exact(acc), exponent_of(acc, -126)});
  const auto [sum, top] = aligned(terms, 13, rule::toward_zero);
  (void)top;
  return round_to_float(sum, 13, rule::toward_zero);
}

// CDNA3 fp8: even and odd lanes (24 bits, truncated), combined floored at 24 bits of the larger,
// then with the accumulator: the sum floored at 31 bits, C at 24 bits (dropped 25 binades below),
// rounded to nearest float32.
inline float gfx942_step(float acc, const std::vector<double>& a, int min_a, const std::vector<double>& b, int min_b) {
  std::vector<weighted> lanes[2];
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != 0 && b[i] != 0)
      lanes[i % 2].push_back({exact(a[i]) * exact(b[i]), exponent_of(a[i], min_a) + exponent_of(b[i], min_b)});
  std::vector<weighted> lane_sums;
  for (const auto& lane : lanes)
    if (!lane.empty()) {
      const auto [s, e] = aligned(lane, 24, rule::toward_zero);
      lane_sums.push_back({s, e});
    }
  std::vector<weighted> parts;
  if (!lane_sums.empty()) {
    const auto [s, e] = aligned(lane_sums, 24, rule::down);
    parts.push_back({s, e});
  }
  int top = parts.empty() ? -100000 : parts.front().exponent;
  const int ec = acc != 0 ? exponent_of(acc, -126) : -100000;
  top = std::max(top, ec);
  cpp_rational total = 0;
  if (!parts.empty()) total += cpp_rational(round_rational(parts.front().value / power_of_two(top - 31), rule::down)) * power_of_two(top - 31);
  if (acc != 0 && ec >= top - 25)
    total += cpp_rational(round_rational(exact(acc) / power_of_two(top - 24), rule::down)) * power_of_two(top - 24);
  return round_to_float(total, 23, rule::nearest_even);
}

}  // namespace mqa::mma_oracle
