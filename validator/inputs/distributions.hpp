// Real-valued draws for q, k and the weights, from integers only.
//
// standard_normal is Irwin-Hall: the sum of 12 uniform 32-bit integers, centred and divided by
// 2^32. Mean exactly 0, variance 1 - 2^-64 (12 times that of a discrete uniform on 2^32 points,
// each scaled by 2^-32), tails cut at +-6 (probability ~2e-9 beyond them for a true normal).
// Every step is an integer sum or a division by a power of two, so the double is exact and
// identical everywhere; chosen over an inverse-CDF table because it needs no table to prove.
#pragma once

#include <cstdint>
#include <span>

#include "validator/rng/rng.hpp"
#include "validator/case/case.hpp"

namespace mqa::inputs {

double standard_normal(const counter_rng& rng, std::uint64_t index);

// Uniform on [-1, 1): a 53-bit integer, centred, times 2^-52.
double uniform_signed(const counter_rng& rng, std::uint64_t index);

// Fills `values` ([rows, row_length] row-major) from the distribution. The shapes are:
//   normal     standard normal
//   uniform    uniform on [-1, 1)
//   outliers   normal, and one element in 64 multiplied by 2^4 .. 2^10: activation outliers that
//              set a token's amax, so the rest of its row falls into the low binades or subnormals
//   near-ties  (keys) every row is one shared normal vector, three rows in four with one element
//              moved by +-1/8 of its value (about one e4m3 code step) and never the largest one, so
//              all rows share one scale and a query's logits agree in their top bits or tie.
//              Queries (`keys` false) are normal.
// `first` is the index of values[0] in the whole tensor (a multiple of row_length): a tensor filled
// in pieces holds exactly the values it would hold filled at once.
void fill(cases::distribution d, bool keys, const counter_rng& rng, std::span<float> values, std::int64_t row_length,
          std::uint64_t first = 0);

}  // namespace mqa::inputs
