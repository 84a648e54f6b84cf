#include "arithmetic.hpp"

namespace mqa::bounds {

// to_string(dot_accumulator) and is_modelled read the accumulator rows (accumulators.cpp).
std::string_view to_string(head_accumulator a) { return names::name_of(kHeadAccumulatorNames, a); }
std::string_view to_string(scale_placement s) { return names::name_of(kScalePlacementNames, s); }
std::string_view to_string(weight_precision w) { return names::name_of(kWeightPrecisionNames, w); }
std::string_view to_string(logits_precision l) { return names::name_of(kLogitsPrecisionNames, l); }

}  // namespace mqa::bounds
