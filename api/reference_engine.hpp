// The exact reference mqacheck computes (the command line and the Python extension): on the GPU when this build has one and a device is
// usable (bit-identical to exact::compute, which it cross-checks on sampled elements every call),
// else exact::compute on the CPU.
#pragma once

#include "reference/exact/logits.hpp"
#include "reference/operation.hpp"
#include "reference/paged/problem.hpp"

namespace mqa::api {

exact::result exact_reference(const exact::problem& p, const exact::options& o);

// A paged problem's reference: each request's gathered keys through the GPU reference one after
// another where it is usable, else paged::compute on every core.
exact::result paged_exact_reference(const paged::problem& p, const exact::options& o);

// Whether exact_reference computes this reference, or this modelled centre (o.dot_model), on the GPU.
bool on_device(const exact::problem& p, const exact::options& o);
// Whether paged_exact_reference computes every request's on the GPU.
bool paged_on_device(const paged::problem& p, const exact::options& o);

// All four, as the validator takes them.
inline operation::engines reference_engines() {
  return {exact_reference, paged_exact_reference, on_device, paged_on_device};
}

}  // namespace mqa::api
