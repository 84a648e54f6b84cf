// The slow, obviously right oracle for mqa::exact::compute. It shares no code with the
// implementation (only mqa::fp8::decode, tested elsewhere against third-party golden vectors):
// every number becomes an exact rational (Boost cpp_rational), the formula is evaluated
// literally, and the float32 result is found by walking the float32 lattice and comparing the
// exact value with the exact midpoints between neighbours. The IEEE rules for non-finite inputs
// are written out case by case as reference/exact/logits.hpp states them.
#pragma once

#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <limits>
#include <stdexcept>

#include "reference/exact/logits.hpp"
#include "reference/fp8/convert.hpp"

namespace mqa::exact_oracle {

using boost::multiprecision::cpp_int;
using boost::multiprecision::cpp_rational;

inline cpp_rational power_of_two(int e) {
  const cpp_int p = cpp_int(1) << (e < 0 ? -e : e);
  return e < 0 ? cpp_rational(cpp_int(1), p) : cpp_rational(p);
}

// The exact value of a finite double: its 53-bit integer significand times a power of two.
inline cpp_rational exactly(double x) {
  if (!std::isfinite(x)) throw std::logic_error("oracle: exactly() of a non-finite value");
  int e = 0;
  const double f = std::frexp(x, &e);
  const auto significand = static_cast<std::int64_t>(std::ldexp(f, 53));
  if (static_cast<double>(significand) != std::ldexp(f, 53)) throw std::logic_error("oracle: significand not integral");
  return cpp_rational(significand) * power_of_two(e - 53);
}

inline std::uint32_t bits(float x) {
  std::uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The float32 lattice seen as a line: ... -FLT_MAX, ..., -0/+0, ..., FLT_MAX, +inf. The midpoint
// between FLT_MAX and +inf is 2^128 - 2^103, where 2^128 would be the next float32 if the
// exponent did not end (IEEE: values from there on round to infinity).
inline cpp_rational midpoint_above(float y) {  // y < +inf
  constexpr float max = std::numeric_limits<float>::max();
  if (y == max) return exactly(y) + power_of_two(103);
  if (y == -std::numeric_limits<float>::infinity()) return -(exactly(max) + power_of_two(103));
  const float next = std::nextafter(y, std::numeric_limits<float>::infinity());
  return (exactly(y) + exactly(next)) / 2;
}
inline cpp_rational midpoint_below(float y) { return -midpoint_above(-y); }  // y > -inf

// The float32 nearest to v, ties to the neighbour with an even significand (for FLT_MAX against
// +inf that is +inf, whose bit pattern is even too). Exact zero is +0; a nonzero value that
// rounds to zero keeps its sign.
inline float round_to_float32(const cpp_rational& v) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  if (v == 0) return 0.0f;
  float y = static_cast<float>(v.convert_to<double>());  // a start; the walk below corrects it
  if (std::isnan(y)) y = 0.0f;
  for (;;) {
    if (y != inf && v > midpoint_above(y)) {
      y = y == -inf ? -std::numeric_limits<float>::max() : std::nextafter(y, inf);
    } else if (y != -inf && v < midpoint_below(y)) {
      y = y == inf ? std::numeric_limits<float>::max() : std::nextafter(y, -inf);
    } else {
      break;
    }
  }
  // Now midpoint_below(y) <= v <= midpoint_above(y). On a midpoint, the even neighbour wins.
  if (y != inf && v == midpoint_above(y) && (bits(y) & 1u) != 0) y = std::nextafter(y, inf);
  if (y != -inf && v == midpoint_below(y) && (bits(y) & 1u) != 0) y = std::nextafter(y, -inf);
  if (y == 0.0f) y = v < 0 ? -0.0f : 0.0f;
  return y;
}

// Everything that is not a finite real number, as a class.
enum class kind { finite, nan, plus_inf, minus_inf };

struct value {
  kind k = kind::finite;
  cpp_rational x;  // when finite
};

inline value nan_value() { return {kind::nan, 0}; }
inline value inf_value(bool negative) { return {negative ? kind::minus_inf : kind::plus_inf, 0}; }
inline bool is_inf(const value& v) { return v.k == kind::plus_inf || v.k == kind::minus_inf; }
inline int sign(const value& v) {  // of a non-NaN value
  if (v.k == kind::plus_inf) return 1;
  if (v.k == kind::minus_inf) return -1;
  return v.x > 0 ? 1 : (v.x < 0 ? -1 : 0);
}
inline value of_double(double d) {
  if (std::isnan(d)) return nan_value();
  if (std::isinf(d)) return inf_value(d < 0);
  return {kind::finite, exactly(d)};
}

// a * b with IEEE's rules for the non-finite cases.
inline value times(const value& a, const value& b) {
  if (a.k == kind::nan || b.k == kind::nan) return nan_value();
  if (is_inf(a) || is_inf(b)) {
    if (sign(a) == 0 || sign(b) == 0) return nan_value();  // inf * 0
    return inf_value(sign(a) * sign(b) < 0);
  }
  return {kind::finite, a.x * b.x};
}

// a + b with IEEE's rules for the non-finite cases.
inline value plus(const value& a, const value& b) {
  if (a.k == kind::nan || b.k == kind::nan) return nan_value();
  if (is_inf(a) && is_inf(b) && a.k != b.k) return nan_value();  // +inf + -inf
  if (is_inf(a)) return a;
  if (is_inf(b)) return b;
  return {kind::finite, a.x + b.x};
}

inline value relu(const value& v, exact::relu_rule rule) {
  if (v.k == kind::nan) return rule == exact::relu_rule::keeps_nan ? v : value{kind::finite, 0};
  if (sign(v) < 0) return {kind::finite, 0};
  return v;
}

inline float to_float(const value& v) {
  switch (v.k) {
    case kind::nan: return std::numeric_limits<float>::quiet_NaN();
    case kind::plus_inf: return std::numeric_limits<float>::infinity();
    case kind::minus_inf: return -std::numeric_limits<float>::infinity();
    case kind::finite: return round_to_float32(v.x);
  }
  return 0;
}

// An element with its block scale: one ue8m0 byte per 32 elements, 2^(byte - 127);
// written out here from the OCP MX definition, not taken from the implementation.
inline double scaled(double code_value, std::span<const std::uint8_t> scales, std::int64_t index) {
  if (scales.empty()) return code_value;
  const int exponent = static_cast<int>(scales[static_cast<std::size_t>(index / 32)]) - 127;
  return code_value * std::pow(2.0, exponent);  // exact: a power of two well inside double's range
}

// The exact value of logits[i, j] (in window), before rounding.
inline value logit_value(const exact::problem& p, std::int64_t i, std::int64_t j, exact::relu_rule rule) {
  value sum{kind::finite, 0};
  for (std::int64_t h = 0; h < p.heads; ++h) {
    value dot{kind::finite, 0};
    for (std::int64_t d = 0; d < p.head_dim; ++d) {
      const double q = scaled(fp8::decode(p.q_format, p.q[static_cast<std::size_t>((i * p.heads + h) * p.head_dim + d)]),
                              p.q_block_scale, (i * p.heads + h) * p.head_dim + d);
      const double k = scaled(fp8::decode(p.k_format, p.k[static_cast<std::size_t>(j * p.head_dim + d)]),
                              p.k_block_scale, j * p.head_dim + d);
      dot = plus(dot, times(of_double(q), of_double(k)));
    }
    const value w = of_double(p.weights[static_cast<std::size_t>(i * p.heads + h)]);
    sum = plus(sum, times(w, relu(dot, rule)));
  }
  return times(of_double(p.k_scale[static_cast<std::size_t>(j)]), sum);
}

inline float logit(const exact::problem& p, std::int64_t i, std::int64_t j, exact::relu_rule rule) {
  const std::int64_t begin = std::max<std::int64_t>(p.ks[static_cast<std::size_t>(i)], 0);
  const std::int64_t end = std::min<std::int64_t>(p.ke[static_cast<std::size_t>(i)], p.n);
  if (j < begin || j >= end) return -std::numeric_limits<float>::infinity();
  return to_float(logit_value(p, i, j, rule));
}

// A[i, j] = |k_scale| sum_h |w| sum_d |q k| exactly, non-finite codes counted as 0; -1 when k_scale
// or a weight is not finite (no exact magnitude exists).
inline cpp_rational magnitude(const exact::problem& p, std::int64_t i, std::int64_t j) {
  const double c = p.k_scale[static_cast<std::size_t>(j)];
  if (!std::isfinite(c)) return -1;
  cpp_rational total = 0;
  for (std::int64_t h = 0; h < p.heads; ++h) {
    const double w = p.weights[static_cast<std::size_t>(i * p.heads + h)];
    if (!std::isfinite(w)) return -1;
    cpp_rational dot = 0;
    for (std::int64_t d = 0; d < p.head_dim; ++d) {
      const double q = scaled(fp8::decode(p.q_format, p.q[static_cast<std::size_t>((i * p.heads + h) * p.head_dim + d)]),
                              p.q_block_scale, (i * p.heads + h) * p.head_dim + d);
      const double k = scaled(fp8::decode(p.k_format, p.k[static_cast<std::size_t>(j * p.head_dim + d)]),
                              p.k_block_scale, j * p.head_dim + d);
      if (std::isfinite(q) && std::isfinite(k)) dot += abs(exactly(q) * exactly(k));
    }
    total += abs(exactly(w)) * dot;
  }
  return abs(exactly(c)) * total;
}

}  // namespace mqa::exact_oracle
