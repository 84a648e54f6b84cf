// The head sum and scaling of one row against a run of keys, in float64 with an a-priori error
// bound, each result either certified correctly rounded to float32 or marked undecided
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

// Running sums over heads for `width` keys: heads may be added a few at a time (the int8 engine
// adds each strip of heads as it is reconstructed), in any order.
struct head_sum_state {
  std::vector<double> sum, magnitude;
  std::int64_t terms = 0;  // products added per key (a pair counts twice)
  double scale = 1;        // a power of two the sums are multiplied by at the end: the int8 engine
                           // adds dots in integer units and scales by unit_q * unit_k (exact)
};

void head_sum_start(head_sum_state& state, std::int64_t width, double scale = 1);
// Adds in.heads heads of in (k_scale and width are not read: state's width applies).
void head_sum_add(head_sum_state& state, const head_sum_input& in);
// y[j] = float32 nearest to k_scale[j] * sum_h weights[h] * relu(dot[h, j]) for keys [first, first
// + count) of the state where undecided[j] == 0 (certified); undecided[j] == 1 where the float64
// enclosure touches a float32 rounding boundary. y, undecided and k_scale are indexed from first.
void head_sum_finish(const head_sum_state& state, std::int64_t first, std::int64_t count, const float* k_scale,
                     float* y, std::uint8_t* undecided);

// start, add every head of `in`, finish over in.width keys.
void head_sums(const head_sum_input& in, head_sum_state& scratch, float* y, std::uint8_t* undecided);

}  // namespace mqa::exact::detail
