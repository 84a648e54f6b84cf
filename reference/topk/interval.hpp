// A key's interval: the values a kernel honouring its contract may give a key, on the line the
// top-k is ranked on. torch.topk ranks NaN above +inf, so the line puts +inf at the greatest double
// and NaN above it, at +inf itself; every end is a number (never NaN), so every comparison of ends
// is an ordering.
//
// The values come from the comparator's element rules (validator/compare/comparator.cpp), first
// match:
//   exact NaN                    [inf, inf]            NaN is promised, whatever the allowance
//   allowance inf or NaN         [-inf, DBL_MAX]       an excused overflow (any value of either
//                                                      sign, infinities included) or an allowance no
//                                                      figure decides (a NaN weight or key scale
//                                                      under a relu that drops NaN): any value but NaN
//   exact +inf                   [DBL_MAX, DBL_MAX]    the infinity itself
//   otherwise                    [exact - allowance, min(exact + allowance, DBL_MAX)]
//                                                      (exact -inf: [-inf, -inf])
// Outside a window a key's exact value is -inf with allowance 0.
#pragma once

namespace mqa::topk {

struct interval {
  double lower = 0, upper = 0;
};

interval interval_of(double exact, double allowance);

}  // namespace mqa::topk
