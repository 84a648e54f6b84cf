// From the project's types to the plain records the GPU sources take (host code only).
#pragma once

#include "reference/exact/logits.hpp"
#include "reference/fp8/format.hpp"
#include "reference/gpu/host_problem.hpp"
#include "reference/paged/problem.hpp"

namespace mqa::gpu {

// The decoding rule of a signed fp8 format with subnormals, from reference/fp8's traits. Throws
// std::invalid_argument for e8m0fnu, which is neither.
code_format to_code_format(fp8::format f);

// The problem's host pointers and sizes. Throws std::invalid_argument when a span's size does not
// match m, n, heads and head_dim (a GPU kernel would read past it).
host_problem view_of(const exact::problem& p);

// A paged problem's host pointers and sizes, once paged::check_problem accepts it (its
// std::invalid_argument names the request and block at fault): a kernel then reads only blocks
// in the cache.
host_paged_problem view_of(const paged::problem& p);

}  // namespace mqa::gpu
