// Error bounds derived from a variant's declared arithmetic. The derivation, its assumptions and
// why a correct kernel cannot exceed the bound are in reference/bounds/README.md.
//
//   |kernel - exact| <= relative * A[i,j] + absolute(i, j)
//
// where A[i,j] = |k_scale[j]| * sum_h |w[i,h]| * sum_d |q k| (the reference's magnitude), and
// `absolute` covers gradual underflow. The comparator adds half an ulp of the correctly rounded
// reference, since it compares against that float rather than the exact real.
#pragma once

#include <cstdint>

#include "arithmetic.hpp"

namespace mqa::bounds {

struct arithmetic {
  dot_accumulator dot = dot_accumulator::fp32;
  head_accumulator heads = head_accumulator::fp32;
  scale_placement scale = scale_placement::after_head_sum;
};

// gamma_n = n u / (1 - n u), rounded upward (Higham, Accuracy and Stability, Lemma 3.1).
double gamma(std::int64_t n, double unit_roundoff);

struct error_bound {
  bool bit_exact = false;          // the contract promises the correctly rounded value itself
  double relative = 0;             // multiplies A[i, j]
  double absolute_per_weight = 0;           // multiplies |k_scale[j]| * sum_h |w[i, h]|
  double absolute_per_unscaled_weight = 0;  // multiplies sum_h |w[i, h]| (k_scale applied before relu)
  double absolute_per_scale = 0;            // multiplies |k_scale[j]|
  double absolute = 0;                      // constant

  double at(double magnitude, double scale_abs, double weights_abs_sum) const {
    return relative * magnitude + absolute_per_weight * scale_abs * weights_abs_sum +
           absolute_per_unscaled_weight * weights_abs_sum + absolute_per_scale * scale_abs + absolute;
  }
};

error_bound derive(const arithmetic& a, std::int64_t head_dim, std::int64_t heads);

}  // namespace mqa::bounds
