// A problem as host memory holds it, in the plain terms the .hip translation units accept (no
// std::span, no reference/ headers): the host adapter (problem_view.hpp) fills it from an
// exact::problem.
#pragma once

#include <cstdint>

#include "kernels/hip/operation.hpp"

namespace mqa::gpu {

struct host_problem {
  const std::uint8_t* q = nullptr;   // [m, heads, head_dim]
  const std::uint8_t* k = nullptr;   // [n, head_dim]
  const float* k_scale = nullptr;    // [n]
  const float* weights = nullptr;    // [m, heads]
  const std::int32_t* ks = nullptr;  // [m]
  const std::int32_t* ke = nullptr;  // [m]
  std::int64_t m = 0, n = 0, heads = 0, head_dim = 0;
  code_format q_format, k_format;
};

}  // namespace mqa::gpu
