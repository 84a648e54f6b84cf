// Error bounds derived from a variant's declared arithmetic. The derivation, its assumptions and
// why a correct kernel cannot exceed the bound are in reference/bounds/README.md.
//
//   |kernel - centre| <= bound.at(element)
//
// where the centre is the exact value of the operation (or, for a modelled dot accumulator, the
// exact value with every dot replaced by the model's), and `element` carries the per-element
// magnitudes the terms multiply. The comparator adds half an ulp of the correctly rounded centre,
// since it compares against that float rather than the exact real.
#pragma once

#include <cstdint>

#include "arithmetic.hpp"

namespace mqa::bounds {

struct arithmetic {
  dot_accumulator dot = dot_accumulator::fp32;
  head_accumulator heads = head_accumulator::fp32;
  scale_placement scale = scale_placement::after_head_sum;
  weight_precision weights = weight_precision::fp32;
  logits_precision logits = logits_precision::fp32;
};

// Where round to nearest overflows to +-inf: float32 at 2^128 - 2^103 (between FLT_MAX and 2^128),
// bfloat16 at 2^128 - 2^119 (between its max (2 - 2^-7) 2^127 and 2^128).
inline constexpr double kFloat32Overflow = 0x1.ffffffp127;
inline constexpr double kBfloat16Overflow = 0x1.ffp127;

// gamma_n = n u / (1 - n u), rounded upward (Higham, Accuracy and Stability, Lemma 3.1).
double gamma(std::int64_t n, double unit_roundoff);

// What the terms of a bound multiply at one element (i, j). Every field is an upper bound of the
// quantity it names (s = k_scale[j], w = the row's weights, P_h = sum_d |q[i,h,d] k[j,d]|).
struct element {
  double magnitude = 0;           // A = |s| sum_h |w_h| P_h; modelled dots: |s| sum_h |w_h| relu(x'_h)
  double unscaled_magnitude = 0;  // sum_h |w_h| P_h (A without |s|), for partial sums before scaling
  double scale_abs = 0;           // |s|
  double weights_abs = 0;         // sum_h |w_h|
  double dots_abs = 0;            // sum_h P_h
  double weighted_q_abs = 0;      // sum_h |w_h| sum_d |q_hd|
  double small_weight_dots_abs = 0;  // sum of P_h over heads with |w_h| < error_bound::small_weight_below
  double scaled_weight_max = 0;   // |s| max_h |w_h|: the largest k_scale * weight product
  double scaled_dot_max = 0;      // |s| max_h P_h: the largest k_scale * dot product
  double value_abs = 0;           // |centre|: the rounding of the result to its output dtype scales with it
};

struct error_bound {
  bool bit_exact = false;  // the contract promises the correctly rounded value itself
  double relative = 0;     // multiplies magnitude
  // Gradual underflow: each float32 rounding with a subnormal result loses up to 2^-150
  // absolutely; each term says what multiplies those losses afterwards.
  double per_scale = 0;             // multiplies |s|
  double per_weight = 0;            // multiplies sum_h |w_h|
  double per_dot = 0;               // multiplies sum_h P_h
  double per_scaled_small_dot = 0;  // multiplies |s| * small_weight_dots_abs
  double per_weighted_q = 0;        // multiplies sum_h |w_h| sum_d |q_hd|
  double per_value = 0;             // multiplies |centre|: a bfloat16 output's last rounding
  double absolute = 0;
  // Weights below this in magnitude may round to a subnormal of the declared weight precision
  // (0 for float32 weights, which are not rounded).
  double small_weight_below = 0;
  // Which products before the final one may reach float32's overflow threshold (see
  // largest_intermediate).
  scale_placement scale = scale_placement::after_head_sum;
  bool heads_exact = false;
  double dot_relative = 0;  // the dot accumulator's relative error alone
  // Where the stored result overflows (the output dtype's threshold); intermediates stay float32.
  double result_overflow = kFloat32Overflow;

  double at(const element& e) const {
    if (bit_exact) return 0;
    const double sum = relative * e.magnitude + per_scale * e.scale_abs + per_weight * e.weights_abs +
                       per_dot * e.dots_abs + per_scaled_small_dot * e.scale_abs * e.small_weight_dots_abs +
                       per_weighted_q * e.weighted_q_abs + per_value * e.value_abs + absolute;
    return sum * (1 + 0x1p-50);  // the few roundings of this evaluation, upward
  }
  // An upper bound of every intermediate magnitude (partial sums and products) that some order of
  // operations the contract allows may produce at this element: where it reaches float32's
  // overflow threshold, +-inf (or +-FLT_MAX) is a legitimate result.
  double largest_intermediate(const element& e) const;
};

error_bound derive(const arithmetic& a, std::int64_t head_dim, std::int64_t heads);

}  // namespace mqa::bounds
