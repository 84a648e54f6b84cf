#include "interval.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mqa::topk {

interval interval_of(double exact, double allowance) {
  constexpr double kPlusInf = std::numeric_limits<double>::max();  // where +inf ranks, below NaN
  if (std::isnan(exact)) return {INFINITY, INFINITY};
  if (std::isnan(allowance) || std::isinf(allowance)) return {-INFINITY, kPlusInf};
  if (exact == INFINITY) return {kPlusInf, kPlusInf};
  return {exact - allowance, std::min(exact + allowance, kPlusInf)};
}

}  // namespace mqa::topk
