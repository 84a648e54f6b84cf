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

#include <vector>

namespace mqa::exact::detail {

// |k| of every key, transposed in groups of 8 keys for the fold below: group g, depth d, lane t at
// values[(g * head_dim + d) * 8 + t] (keys past n hold 0). float32 holds every fp8 value exactly
// and halves what each row block streams from L3.
struct key_magnitudes {
  std::int64_t head_dim = 0;
  std::vector<float> values;
};
key_magnitudes pack_key_magnitudes(const std::vector<double>& abs_k, std::int64_t n, std::int64_t head_dim);

// fold[r * width + j] = sum_d q_fold[r * head_dim + d] * |k[key0 + j, d]| for r < rows, j < width,
// key0 a multiple of 8: the GEMM above, in any order (AVX-512 where the CPU has it).
void fold_abt(const double* q_fold, std::int64_t rows, const key_magnitudes& keys, std::int64_t key0,
              std::int64_t width, double* fold);

}  // namespace mqa::exact::detail
