// reference.npy: the exact reference (reference/exact; a paged case's by reference/paged) on a case's
// generated inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"
#include "validator/case/case.hpp"
#include "validator/inputs/inputs.hpp"

namespace mqa::bundle {

// [m, n] float32: correctly rounded logits in every window, -inf outside (IEEE relu: NaN kept).
std::vector<float> exact_reference(const cases::case_spec& c, const inputs::tensors& t);

// Engines that give exact::compute's (paged::compute's) bits faster, such as the command line's
// GPU reference; an empty one is the CPU's.
struct reference_engines {
  std::function<exact::result(const exact::problem&, const exact::options&)> prefill;
  std::function<exact::result(const paged::problem&, const exact::options&)> paged;
};

// Rows [first, first + count) of the same into out (count * n values): no magnitude is asked for.
void exact_reference_rows(const cases::case_spec& c, const inputs::tensors& t, std::int64_t first, std::int64_t count,
                          std::span<float> out, const reference_engines& engines = {});

}  // namespace mqa::bundle
