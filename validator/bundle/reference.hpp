// reference.npy: the exact reference (reference/exact) on a case's generated inputs.
#pragma once

#include <vector>

#include "validator/case/case.hpp"
#include "validator/inputs/inputs.hpp"

namespace mqa::bundle {

// [m, n] float32: correctly rounded logits in every window, -inf outside (IEEE relu: NaN kept).
std::vector<float> exact_reference(const cases::case_spec& c, const inputs::tensors& t);

}  // namespace mqa::bundle
