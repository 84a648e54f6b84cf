// Windows outside [0, n) on purpose (BUGCLASSES 15): only for cases whose layout sets
// out_of_range = true.
#pragma once

#include "layout.hpp"

namespace mqa::layout {

// Rewrites max(1, m / 4) distinct rows picked by the seed, cycling through the four faults kernels
// mishandle (all four appear from m = 16 on):
//   0: ke past n (clamp or reject; reading past the tensor otherwise)
//   1: ks negative
//   2: ks > ke (an inverted window: empty after clamping, not "everything")
//   3: ks = ke = -1, the padding of unused rows that a uint32 read turns into ~4e9
void plant_out_of_range(const cases::case_spec& c, windows& w);

}  // namespace mqa::layout
