// A[i, j] = |k_scale[j]| * sum_h |w[i,h]| * sum_d |q[i,h,d] k[j,d]| by one small product: all terms
// are nonnegative, so the sums may be reordered freely,
//   A[i, j] = |k_scale[j]| * sum_d Qa[i, d] |k[j, d]|,   Qa[i, d] = sum_h |w[i,h]| |q[i,h,d]|,
// a GEMM of [rows, D] x [D, keys]: 1/heads of the dots' cost.
//
// Error bound: |w| |q| is exact (24 + 4 significant bits, no underflow); Qa rounds heads - 1 times,
// the dot over d at most head_dim times, the scaling once: at most K = heads + head_dim roundings
// on every path (any order, FMA or not). With nonnegative terms the computed a' satisfies
// a' >= A (1 - gamma_K), so A <= a' / (1 - gamma_K) <= a' (1 + 2 K u) = a' (1 + K 2^-52) for
// K u <= 1/4. upper_bound() returns fl(a' (1 + (K + 3) 2^-52)) >= a' (1 + (K + 2) 2^-52)(1 - u)
// >= a' (1 + K 2^-52) >= A: an upper bound, and above A by at most a relative
// 2 (heads + head_dim + 3) 2^-52. (Quantities stay far from float64's underflow and overflow.)
#pragma once

#include <cstdint>

namespace mqa::exact::detail {

inline double magnitude_upper_bound(double computed, std::int64_t heads, std::int64_t head_dim) {
  const double factor = 1.0 + static_cast<double>(heads + head_dim + 3) * 0x1p-52;  // exact for sizes < 2^52
  return computed * factor;
}

}  // namespace mqa::exact::detail
