// The head sum and scaling of one row against a run of keys, in float64 with error-free
// transformations, each result either certified correctly rounded to float32 or marked undecided
// (exact_sum.hpp settles those). Both paths read the same input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mqa::exact::detail {

// Column j (0 <= j < width) of head h holds the exact dot product of head h with key j as the
// unevaluated sum dot_hi[h * head_stride + j] + dot_lo[...] of two float64 (dot_lo == nullptr:
// the dots are exact float64). Every dot is finite and an integer multiple of 2^-42 below 2^100
// (true of fp8 dots and of block-scaled e2m1fn ones, see codes.hpp and logits.hpp); weights and
// k_scale are finite.
struct head_sum_input {
  const double* dot_hi = nullptr;
  const double* dot_lo = nullptr;
  std::ptrdiff_t head_stride = 0;
  std::int64_t heads = 0;
  const float* weights = nullptr;  // [heads]: this row's weights
  const float* k_scale = nullptr;  // [width]: the keys' scales
  std::int64_t width = 0;
};

// relu on the pair: hi carries the sign of hi + lo (|lo| <= ulp(hi) / 2), and hi == 0 only when
// the pair is zero.
inline bool dot_is_positive(double hi) { return hi > 0; }

struct head_sum_scratch {
  std::vector<double> sum, error, magnitude;
};

// y[j] = float32 nearest to k_scale[j] * sum_h weights[h] * relu(dot[h, j]) where undecided[j] == 0
// (certified); undecided[j] == 1 where the float64 enclosure touches a float32 rounding boundary.
void head_sums(const head_sum_input& in, head_sum_scratch& scratch, float* y, std::uint8_t* undecided);

}  // namespace mqa::exact::detail
