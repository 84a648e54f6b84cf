// A problem as host memory holds it, in the plain terms the .hip translation units accept (no
// std::span, no reference/ headers): the host adapter (problem_view.hpp) fills it from an
// exact::problem.
#pragma once

#include <cstdint>

#include "reference/gpu/operation.hpp"

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

// A paged problem in host memory, checked by paged::check_problem before it gets here:
// every block a context uses lies in the cache, so a correct kernel never reads outside it.
struct host_paged_problem {
  const std::uint8_t* q = nullptr;             // [batch * next_n, heads, head_dim]
  const float* weights = nullptr;              // [batch * next_n, heads]
  const std::uint8_t* kv_cache = nullptr;      // [num_blocks, page_bytes]
  const std::int32_t* block_table = nullptr;   // [batch, max_blocks]
  const std::int32_t* context_lens = nullptr;  // [batch] or [batch, next_n]
  std::int64_t batch = 0, next_n = 1, heads = 0, head_dim = 0;
  std::int64_t block_kv = 0, num_blocks = 0, page_bytes = 0, max_blocks = 0, max_context = 0;
  bool context_lens_2d = false;
  code_format q_format, k_format;
  std::int64_t rows() const { return batch * next_n; }
};

}  // namespace mqa::gpu
