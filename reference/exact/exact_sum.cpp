// Every input is a dyadic rational: a float32 or float64 x is M * 2^e with M an integer of at most
// 53 bits. The sum of products of such numbers is therefore N * 2^E with N an integer: no rational
// arithmetic is needed, only integer shifts, products and sums, all exact in cpp_int.
#include "exact_sum.hpp"

#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <limits>

namespace mqa::exact::detail {
namespace {

using boost::multiprecision::cpp_int;

// x = mantissa * 2^exponent exactly, for finite x.
struct dyadic {
  cpp_int mantissa;
  std::int64_t exponent = 0;
};

dyadic to_dyadic(double x) {
  int e = 0;
  const double fraction = std::frexp(x, &e);  // x = fraction * 2^e, 0.5 <= |fraction| < 1
  return {cpp_int(static_cast<std::int64_t>(std::ldexp(fraction, 53))), static_cast<std::int64_t>(e) - 53};
}

// Running exact sum: value = mantissa * 2^exponent; a term with a lower exponent lowers it.
void accumulate(dyadic& sum, const cpp_int& mantissa, std::int64_t exponent) {
  if (mantissa == 0) return;
  if (sum.mantissa == 0) {
    sum = {mantissa, exponent};
  } else if (exponent >= sum.exponent) {
    sum.mantissa += mantissa << static_cast<unsigned>(exponent - sum.exponent);
  } else {
    sum.mantissa = (sum.mantissa << static_cast<unsigned>(sum.exponent - exponent)) + mantissa;
    sum.exponent = exponent;
  }
}

dyadic head_sum(const head_sum_input& in, std::int64_t column) {
  dyadic sum;
  for (std::int64_t h = 0; h < in.heads; ++h) {
    const std::ptrdiff_t at = h * in.head_stride + column;
    if (!dot_is_positive(in.dot_hi[at])) continue;  // relu: the term is w * 0 = 0
    const dyadic w = to_dyadic(in.weights[h]);
    const dyadic hi = to_dyadic(in.dot_hi[at]);
    accumulate(sum, w.mantissa * hi.mantissa, w.exponent + hi.exponent);
    if (in.dot_lo != nullptr && in.dot_lo[at] != 0) {
      const dyadic lo = to_dyadic(in.dot_lo[at]);
      accumulate(sum, w.mantissa * lo.mantissa, w.exponent + lo.exponent);
    }
  }
  return sum;
}

// RN32 of N * 2^E: keep the 24 significant bits above float32's lsb at this magnitude (at least
// 2^-149, the subnormal lsb), round the dropped bits to nearest, ties to the even kept value.
float round_to_float32(cpp_int n, std::int64_t e) {
  if (n == 0) return 0.0f;  // exact zero: +0 (logits.hpp)
  const bool negative = n < 0;
  if (negative) n = -n;
  const auto top = static_cast<std::int64_t>(boost::multiprecision::msb(n)) + e;  // floor(log2 |V|)
  const std::int64_t lsb = std::max<std::int64_t>(top - 23, -149);
  cpp_int kept;
  if (lsb <= e) {
    kept = n << static_cast<unsigned>(e - lsb);  // fewer than 24 bits: exact
  } else {
    const auto dropped = static_cast<unsigned>(lsb - e);
    kept = n >> dropped;
    const cpp_int rest = n - (kept << dropped);
    const cpp_int half = cpp_int(1) << (dropped - 1);
    if (rest > half || (rest == half && boost::multiprecision::bit_test(kept, 0))) ++kept;
  }
  // kept <= 2^24 (a carry out of 24 bits leaves exactly 2^24): kept * 2^lsb is the value rounded
  // with an unbounded exponent; from 2^128 on, IEEE round-to-nearest overflows to infinity.
  float magnitude = std::numeric_limits<float>::infinity();
  if (kept != 0 && static_cast<std::int64_t>(boost::multiprecision::msb(kept)) + lsb < 128)
    magnitude = static_cast<float>(std::ldexp(kept.convert_to<double>(), static_cast<int>(lsb)));
  if (kept == 0) magnitude = 0.0f;
  return negative ? -magnitude : magnitude;
}

}  // namespace

float exact_logit(const head_sum_input& in, std::int64_t column) {
  dyadic value = head_sum(in, column);
  const dyadic c = to_dyadic(in.k_scale[column]);
  value.mantissa *= c.mantissa;
  value.exponent += c.exponent;
  return round_to_float32(value.mantissa, value.exponent);
}

int exact_side_of(const head_sum_input& in, std::int64_t column, float r) {
  dyadic value = head_sum(in, column);
  const dyadic c = to_dyadic(in.k_scale[column]);
  value.mantissa *= c.mantissa;
  value.exponent += c.exponent;
  const dyadic minus_r = r == 0 ? dyadic{} : to_dyadic(-static_cast<double>(r));
  accumulate(value, minus_r.mantissa, minus_r.exponent);
  return value.mantissa > 0 ? 1 : (value.mantissa < 0 ? -1 : 0);
}

int exact_sign_of_head_sum(const head_sum_input& in, std::int64_t column) {
  const cpp_int& n = head_sum(in, column).mantissa;
  return n > 0 ? 1 : (n < 0 ? -1 : 0);
}

}  // namespace mqa::exact::detail
