#include "ulp_scales.hpp"

namespace mqa::compare {

std::optional<double> fractional_ulp_histogram::max() const {
  if (units.total == 0) return std::nullopt;
  return std::ldexp(static_cast<double>(units.max), -kFractionBits);
}

std::optional<double> fractional_ulp_histogram::percentile(double p) const {
  if (units.total == 0) return std::nullopt;
  return std::ldexp(static_cast<double>(units.percentile(p)), -kFractionBits);
}

}  // namespace mqa::compare
