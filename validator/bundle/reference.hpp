// reference.npy: the exact reference (reference/exact; a paged case's by reference/paged) on a case's
// generated inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "reference/exact/logits.hpp"
#include "reference/operation.hpp"
#include "reference/paged/problem.hpp"
#include "validator/case/case.hpp"
#include "validator/inputs/inputs.hpp"

namespace mqa::bundle {

// [m, n] float32: correctly rounded logits in every window, -inf outside (IEEE relu: NaN kept).
std::vector<float> exact_reference(const cases::case_spec& c, const inputs::tensors& t);

// Rows [first, first + count) of the same into out (count * n values): no magnitude is asked for.
void exact_reference_rows(const cases::case_spec& c, const inputs::tensors& t, std::int64_t first, std::int64_t count,
                          std::span<float> out, const operation::engines& engines = {});

}  // namespace mqa::bundle
