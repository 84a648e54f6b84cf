// The fallback: the same element as head_sum.hpp computed exactly in integers (Boost.Multiprecision
// cpp_int) and rounded to float32 by integer arithmetic. Slow, and used only where the fast path
// is undecided.
#pragma once

#include <cstdint>

#include "head_sum.hpp"

namespace mqa::exact::detail {

// float32 nearest (ties to even) to k_scale[column] * sum_h weights[h] * relu(dot[h, column]).
float exact_logit(const head_sum_input& in, std::int64_t column);

// Sign (-1, 0, +1) of sum_h weights[h] * relu(dot[h, column]): what an infinite k_scale needs
// (inf * 0 = NaN, otherwise +-inf).
int exact_sign_of_head_sum(const head_sum_input& in, std::int64_t column);

// Sign (-1, 0, +1) of V - r, V = k_scale[column] * sum_h weights[h] * relu(dot[h, column]) exactly
// and r a finite float: which side of a rounding boundary r the exact value lies on.
int exact_side_of(const head_sum_input& in, std::int64_t column, float r);

}  // namespace mqa::exact::detail
