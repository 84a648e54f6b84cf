#include "error_bound.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace mqa::bounds {
namespace {

constexpr double kFp32 = 0x1p-24;         // float32 unit roundoff (round to nearest)
constexpr double kBf16 = 0x1p-8;          // bfloat16 unit roundoff
constexpr double kTruncated22 = 0x1p-13;  // 13 kept fraction bits, truncation: a whole unit
constexpr double kFp32Underflow = 0x1p-150;   // half the float32 subnormal spacing
constexpr double kBf16Underflow = 0x1p-134;   // half the bfloat16 subnormal spacing
constexpr double kTruncUnderflow = 0x1p-149;  // truncation loses up to a whole subnormal step

constexpr std::array<std::string_view, 4> kDot{"exact", "fp32", "fp22-truncated", "bf16"};
constexpr std::array<std::string_view, 2> kHeads{"exact", "fp32"};
constexpr std::array<std::string_view, 2> kScale{"after-head-sum", "before-relu"};

double up(double x) { return std::nextafter(x, std::numeric_limits<double>::infinity()); }

// (1 + a)(1 + b) - 1, rounded upward.
double compose(double a, double b) { return up(up(a + b) + up(a * b)); }

}  // namespace

std::string_view to_string(dot_accumulator a) { return kDot[static_cast<std::size_t>(a)]; }
std::string_view to_string(head_accumulator a) { return kHeads[static_cast<std::size_t>(a)]; }
std::string_view to_string(scale_placement s) { return kScale[static_cast<std::size_t>(s)]; }
std::optional<dot_accumulator> parse_dot_accumulator(std::string_view name) {
  for (std::size_t i = 0; i < kDot.size(); ++i)
    if (kDot[i] == name) return static_cast<dot_accumulator>(i);
  return std::nullopt;
}

double gamma(std::int64_t n, double u) {
  if (n <= 0) return 0;
  const double nu = up(static_cast<double>(n) * u);
  return up(nu / (1 - nu));
}

error_bound derive(const arithmetic& a, std::int64_t head_dim, std::int64_t heads) {
  error_bound b;
  // Exact products, an exact head sum and one rounding at the end is the correctly rounded value
  // itself: nothing is excused, the comparator demands the reference's bits.
  b.bit_exact = a.dot == dot_accumulator::exact && a.heads == head_accumulator::exact;
  if (b.bit_exact) return b;
  // Dot product of exact fp8 products (an e4m3 or e5m2 product has at most 8 significant bits
  // and lies well inside float32's range, so forming it is exact): D - 1 additions.
  double dot = 0, dot_underflow = 0;
  switch (a.dot) {
    case dot_accumulator::exact: break;
    case dot_accumulator::fp32:
      dot = gamma(head_dim - 1, kFp32);
      dot_underflow = static_cast<double>(head_dim) * kFp32Underflow;
      break;
    case dot_accumulator::fp22_truncated:
      // Each addition (and each alignment of a product to the accumulator) keeps 13 fraction
      // bits of the larger operand and truncates: relative error below 2^-13, D operations.
      dot = gamma(head_dim, kTruncated22);
      dot_underflow = static_cast<double>(head_dim) * kTruncUnderflow;
      break;
    case dot_accumulator::bf16:
      dot = compose(gamma(head_dim - 1, kFp32), kBf16);
      dot_underflow = static_cast<double>(head_dim) * kFp32Underflow + kBf16Underflow;
      break;
  }
  // relu is 1-Lipschitz: it never enlarges an error. k_scale folded in before relu is one more
  // float32 product per head; its underflow is then multiplied by |w| only, not by |k_scale|.
  const bool scale_first = a.scale == scale_placement::before_relu;
  double scaled_dot_underflow = 0;
  if (scale_first) {
    dot = compose(dot, kFp32);
    scaled_dot_underflow = kFp32Underflow;
  }
  // Head sum: H products w * r and H - 1 additions, gamma_H of sum |w r|. Its underflow is
  // multiplied by |k_scale| afterwards, unless k_scale came first.
  double head = 0, head_underflow = 0;
  if (a.heads == head_accumulator::fp32) {
    head = gamma(heads, kFp32);
    head_underflow = static_cast<double>(heads) * kFp32Underflow;
  }
  // The result is rounded to float32 once more at the end (the k_scale product, or the final
  // conversion of an exact head sum).
  const double final_rounding = kFp32;
  b.relative = compose(compose(dot, head), final_rounding);
  const double carried = (1 + head) * (1 + final_rounding);  // what later roundings can add
  b.absolute_per_weight = up(dot_underflow * carried);       // times |k_scale| sum |w|
  b.absolute_per_unscaled_weight = up(scaled_dot_underflow * carried);  // times sum |w|
  b.absolute_per_scale = scale_first ? 0.0 : up(head_underflow * (1 + final_rounding));
  b.absolute = up(kFp32Underflow + (scale_first ? head_underflow * (1 + final_rounding) : 0.0));
  return b;
}

}  // namespace mqa::bounds
