// Device helpers every kernel shares: per-block decode tables and the output store. Included by
// .hip translation units only.
#pragma once

#include <cstdint>

#include "reference/gpu/hip_compat.hpp"
#include "reference/gpu/operation.hpp"

namespace mqa::gpu {

// Each block decodes the 256 codes of a format once into shared memory: afterwards a code costs
// one shared load. `nonfinite_as_zero` serves the exact reference, which hands elements with a
// NaN or Inf input to the CPU and only needs their finite neighbours right.
__device__ inline void fill_decode_table(float* table, const code_format& f, bool nonfinite_as_zero = false) {
  for (int c = static_cast<int>(threadIdx.x); c < 256; c += static_cast<int>(blockDim.x)) {
    const auto code = static_cast<std::uint8_t>(c);
    table[c] = nonfinite_as_zero && code_is_nonfinite(f, code) ? 0.0f : decode_code(f, code);
  }
}

__device__ inline float negative_infinity() { return float_from_bits(kNegativeInfinityBits); }

// Rows go on grid y, which holds at most 65535 blocks: a block loops over rows with that stride.
inline unsigned grid_rows(std::int64_t m) {
  return static_cast<unsigned>(m < 1 ? 1 : (m > 65535 ? 65535 : m));
}

}  // namespace mqa::gpu
