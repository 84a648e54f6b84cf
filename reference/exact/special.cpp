#include "special.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "exact_sum.hpp"
#include "reference/fp8/convert.hpp"

namespace mqa::exact::detail {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();  // 0x7FC00000
constexpr float kInf = std::numeric_limits<float>::infinity();

// What a sum of terms has seen: any NaN, any +inf, any -inf.
struct seen {
  bool nan = false, positive_inf = false, negative_inf = false;
  void add(double x) {
    nan |= std::isnan(x);
    positive_inf |= x == HUGE_VAL;
    negative_inf |= x == -HUGE_VAL;
  }
  bool any() const { return nan || positive_inf || negative_inf; }
  // The IEEE sum's value when it is not finite.
  double nonfinite_value() const {
    if (nan || (positive_inf && negative_inf)) return std::numeric_limits<double>::quiet_NaN();
    return positive_inf ? HUGE_VAL : -HUGE_VAL;
  }
};

}  // namespace

value_class dot_class(std::span<const std::uint8_t> q, std::span<const std::uint8_t> k, fp8::format q_format,
                      fp8::format k_format) {
  const auto& qv = fp8::decode_table(q_format);
  const auto& kv = fp8::decode_table(k_format);
  seen products;
  for (std::size_t d = 0; d < q.size(); ++d) products.add(qv[q[d]] * kv[k[d]]);  // IEEE: inf * 0 = NaN
  if (!products.any()) return value_class::finite;
  const double v = products.nonfinite_value();
  if (std::isnan(v)) return value_class::nan;
  return v > 0 ? value_class::positive_inf : value_class::negative_inf;
}

std::optional<float> nonfinite_logit(std::span<const value_class> classes, relu_rule relu, double* dot_hi,
                                     double* dot_lo, const float* weights, float k_scale) {
  // Head terms w * relu(dot): only their class matters unless all are finite.
  seen terms;
  for (std::size_t h = 0; h < classes.size(); ++h) {
    double r = 0;  // relu(dot), as far as its class goes: NaN, +inf, 0 or a positive finite
    switch (classes[h]) {
      case value_class::nan: r = relu == relu_rule::keeps_nan ? std::numeric_limits<double>::quiet_NaN() : 0.0; break;
      case value_class::positive_inf: r = HUGE_VAL; break;
      case value_class::negative_inf: r = 0.0; break;
      case value_class::finite: r = dot_is_positive(dot_hi[h]) ? 1.0 : 0.0; break;
    }
    if (classes[h] != value_class::finite) {  // head_sums sees relu's 0 (other classes end here)
      dot_hi[h] = 0.0;
      if (dot_lo != nullptr) dot_lo[h] = 0.0;
    }
    terms.add(static_cast<double>(weights[h]) * r);  // IEEE: inf * 0 = NaN, NaN * x = NaN
  }
  const double c = k_scale;
  if (terms.any()) {
    const double t = terms.nonfinite_value();
    if (std::isnan(t) || std::isnan(c) || c == 0) return kNaN;
    return (t > 0) == (c > 0) ? kInf : -kInf;
  }
  if (std::isnan(c)) return kNaN;
  if (std::isinf(c)) {
    const float unit_scale = 1.0f;
    const head_sum_input column{dot_hi, dot_lo, 1, static_cast<std::int64_t>(classes.size()), weights, &unit_scale, 1};
    const int sign = exact_sign_of_head_sum(column, 0);
    if (sign == 0) return kNaN;
    return (sign > 0) == (c > 0) ? kInf : -kInf;
  }
  return std::nullopt;
}

}  // namespace mqa::exact::detail

namespace mqa::exact {

bool relu_rule_matters(const problem& p) {
  if (!p.q_block_scale.empty() || !p.k_block_scale.empty()) return true;
  const auto any_nonfinite = [](std::span<const std::uint8_t> codes, fp8::format f) {
    const std::array<double, 256>& value = fp8::decode_table(f);
    return std::any_of(codes.begin(), codes.end(), [&](std::uint8_t c) { return !std::isfinite(value[c]); });
  };
  return any_nonfinite(p.q, p.q_format) || any_nonfinite(p.k, p.k_format);
}

}  // namespace mqa::exact
