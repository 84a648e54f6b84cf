#include "error_bound.hpp"

#include "accumulators.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mqa::bounds {
namespace {

constexpr double kFp32 = 0x1p-24;          // float32 unit roundoff (round to nearest)
constexpr double kBf16 = 0x1p-8;           // bfloat16 unit roundoff (8 significant bits)
constexpr double kFp16 = 0x1p-11;          // float16 unit roundoff (11 significant bits)
constexpr double kFp32Underflow = 0x1p-150;  // half the float32 subnormal spacing
constexpr double kBf16Underflow = 0x1p-134;  // half the bfloat16 subnormal spacing (2^-133)

double up(double x) { return std::nextafter(x, std::numeric_limits<double>::infinity()); }

// (1 + a)(1 + b) - 1, rounded upward.
double compose(double a, double b) { return up(up(a + b) + up(a * b)); }
double times(double a, double b) { return up(a * b); }

// The relative error of one dot product before relu, as its accumulator's row declares it
// (accumulators.cpp). fp8 products are exact in float32 (at most 4 x 4 significant bits) and at
// least 2^-34 in magnitude (e5m2fnuz's smallest subnormal squared), so no partial sum is ever a
// float32 subnormal: dots never underflow. Block-scaled e2m1fn operands keep both facts:
// products of at most 6 significant bits, at least 2^-42 with block scales held to 2^-20 .. 2^20
// (exact::kBlockScaleMaxExponent), so the same terms apply over the scaled values (README.md,
// "Block-scaled fp4 dots"). An exact dot, and a modelled one (the centre the comparator uses
// already holds the model's dots), charge nothing.
double dot_error(const dot_rounding& r, std::int64_t head_dim) {
  if (r.unit == 0) return 0;
  const double sum = gamma(head_dim + r.steps, r.unit);
  return r.last == 0 ? sum : compose(sum, r.last);
}

struct weight_rounding {
  double relative = 0;      // unit roundoff of the weight format
  double underflow = 0;     // half its subnormal spacing
  double normal_below = 0;  // its smallest normal number
};

weight_rounding rounding_of(weight_precision w) {
  switch (w) {
    case weight_precision::fp32: return {};                          // the weights as given
    case weight_precision::bf16: return {kBf16, 0x1p-134, 0x1p-126};  // subnormals 2^-133 apart
    case weight_precision::fp16: return {kFp16, 0x1p-25, 0x1p-14};    // subnormals 2^-24 apart
  }
  return {};
}

}  // namespace

double gamma(std::int64_t n, double u) {
  if (n <= 0) return 0;
  const double nu = up(static_cast<double>(n) * u);
  return up(nu / (1 - nu));
}

namespace {

error_bound derive_float32_result(const arithmetic& a, std::int64_t head_dim, std::int64_t heads) {
  error_bound b;
  b.scale = a.scale;
  b.heads_exact = a.heads == head_accumulator::exact;
  // Exact products, an exact head sum and one rounding at the end is the correctly rounded value
  // itself: nothing is excused, the comparator demands the reference's bits.
  b.bit_exact = a.dot == dot_accumulator::exact && b.heads_exact && a.weights == weight_precision::fp32;
  if (b.bit_exact) return b;

  const double dot = dot_error(traits(a.dot).rounding, head_dim);
  b.dot_relative = dot;
  const weight_rounding w = rounding_of(a.weights);
  b.small_weight_below = w.normal_below;
  const double eta = kFp32Underflow;
  const auto h = static_cast<double>(heads);

  // Higham's recursive-summation argument: every term s * w_h * relu(x_h) reaches the result
  // through at most k float32 roundings, so its computed contribution is the term times
  // (1 + theta), |theta| <= gamma_k, in every order and grouping of the additions.
  if (b.heads_exact) {
    // Exact head sum and scaling, one rounding at the end: k = 1.
    b.relative = compose(compose(dot, w.relative), kFp32);
    b.per_scaled_small_dot = times(times(w.underflow, 1 + dot), 1 + kFp32);
    b.absolute = eta;
    return b;
  }
  switch (a.scale) {
    case scale_placement::after_head_sum:
    case scale_placement::into_weights: {
      // k = H + 1 on every path: w * r (or s * w, then w' * r: 2), H - 1 additions, s * sum (or
      // s * partial sum; none for into-weights).
      const double g = gamma(heads + 1, kFp32);
      b.relative = compose(compose(dot, w.relative), g);
      // s * w_h underflowing (into-weights) loses 2^-150 times relu(x_h) <= (1 + dot) P_h.
      b.per_dot = times(times(eta, 1 + g), 1 + dot);
      // A weight rounded into a subnormal loses half its format's subnormal step, times |s r_h|.
      b.per_scaled_small_dot = times(times(w.underflow, 1 + g), 1 + dot);
      if (a.scale == scale_placement::after_head_sum) {
        // H products w * r, each multiplied by s afterwards (final or per partial sum); up to H
        // products s * partial (per-lane partials) or one final s * sum, nothing after them.
        b.per_scale = times(h * eta, 1 + g);
        b.absolute = up(times(h * eta, 1 + g) + eta);
      } else {
        b.absolute = times(h * eta, 1 + g);  // the H products w' * r
      }
      break;
    }
    case scale_placement::into_keys_bf16: {
      // k' = RN_bf16(s k) per element: a relative 2^-8 on every product (or 2^-134 absolutely
      // where s k is a bfloat16 subnormal, times |q| and |w| afterwards), then the dot as declared
      // and relu (1-Lipschitz), then k = H on the head sum.
      const double g = gamma(heads, kFp32);
      b.relative = compose(compose(compose(kBf16, dot), w.relative), g);
      b.per_weighted_q = times(times(times(0x1p-134, 1 + dot), 1 + w.relative), 1 + g);
      b.per_scaled_small_dot = times(times(times(w.underflow, 1 + dot), 1 + kBf16), 1 + g);
      b.absolute = times(up(h * eta + h * eta * w.underflow), 1 + g);
      break;
    }
    case scale_placement::before_relu: {
      // s * x rounds before relu (1-Lipschitz): the dot's error, then k = H on the head sum.
      const double g = gamma(heads, kFp32);
      b.relative = compose(compose(compose(dot, kFp32), w.relative), g);
      b.per_weight = times(times(eta, 1 + w.relative), 1 + g);  // s * x underflowing, times |w_h|
      b.per_scaled_small_dot = times(times(times(w.underflow, 1 + dot), 1 + kFp32), 1 + g);
      // the H products w * r (not scaled afterwards), and a small weight's loss times s * x's own.
      b.absolute = times(up(h * eta + h * eta * w.underflow), 1 + g);
      break;
    }
  }
  return b;
}


// A bfloat16 output is the float32 result y the contract bounds, rounded to nearest even as it is
// stored (or the exact value rounded once: covered too). |RN_bf16(y) - y| <= u_bf |y| + 2^-134 (the
// second term where y is a bfloat16 subnormal) and |y| <= |c| + E, so
//   |RN_bf16(y) - c| <= E (1 + u_bf) + u_bf |c| + 2^-134.
// The rounding scales with the result, not with A: a kernel that rounds twice (2 u_bf |c|) exceeds
// it wherever A's cancellation leaves E small. A bit-exact contract stays bit exact: the comparator
// then demands the correctly rounded bfloat16 of the exact value.
error_bound with_bfloat16_result(error_bound b) {
  b.result_overflow = kBfloat16Overflow;
  if (b.bit_exact) return b;
  const double grow = 1 + kBf16;
  for (double* term : {&b.relative, &b.per_scale, &b.per_weight, &b.per_dot, &b.per_scaled_small_dot,
                       &b.per_weighted_q, &b.absolute})
    *term = times(*term, grow);
  b.per_value = kBf16;
  b.absolute = up(b.absolute + kBf16Underflow);
  return b;
}

}  // namespace

error_bound derive(const arithmetic& a, std::int64_t head_dim, std::int64_t heads) {
  const error_bound b = derive_float32_result(a, head_dim, heads);
  return a.logits == logits_precision::bf16 ? with_bfloat16_result(b) : b;
}

double error_bound::largest_intermediate(const element& e) const {
  if (bit_exact || heads_exact) return 0;  // nothing is rounded to float32 before the result
  const double grown = 1 + relative;
  double largest = e.magnitude * grown;  // scaled partial sums and the result
  switch (scale) {
    case scale_placement::after_head_sum:
      // Partial head sums before k_scale multiplies them: when |s| < 1 they exceed the result.
      largest = std::max({largest, e.unscaled_magnitude * grown, e.scaled_weight_max * grown});
      break;
    case scale_placement::into_weights: largest = std::max(largest, e.scaled_weight_max * grown); break;
    case scale_placement::before_relu:
    case scale_placement::into_keys_bf16:
      largest = std::max(largest, e.scaled_dot_max * (1 + dot_relative) * (1 + 0x1p-7));
      break;
  }
  return largest * (1 + 0x1p-50);
}

}  // namespace mqa::bounds
