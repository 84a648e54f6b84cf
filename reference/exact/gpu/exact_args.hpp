// The exact reference's kernels and their launchers (exact_kernel.hip, and the Hopper wgmma form
// of the integer engine in exact_wgmma.cu) share these plain records: device
// pointers and sizes, read by nvcc, hipcc and the host compiler alike.
#pragma once

#include <cstdint>

#include "reference/exact/gpu/model_step.hpp"
#include "reference/gpu/operation.hpp"

namespace mqa::gpu {

struct exact_args {
  logits_args in;                      // inputs on the device (in.out unused)
  const std::int64_t* rows = nullptr;  // [row_count] rows of the problem to compute
  std::int64_t row_count = 0;
  double* fold = nullptr;               // [row_count, head_dim]: sum_h |w| |q| (prepare_rows)
  std::uint8_t* row_special = nullptr;  // [row_count] (prepare_rows)
  std::uint8_t* key_special = nullptr;  // [n] (prepare_keys)
  float* logits = nullptr;              // [row_count, n]
  double* magnitude = nullptr;          // [row_count, n]
  std::uint8_t* undecided = nullptr;    // [row_count, n]
  unsigned* undecided_count = nullptr;  // [row_count]
};

// The integer engine's operands (exact_kernel.hip says why they are exact): every value as an
// integer I = |value| / unit below 2^21, split into three signed 7-bit slices, I = sign (u2 2^14 +
// u1 2^7 + u0); the products of slices a and b land in shift class a + b.
inline constexpr int kSlices = 3;
inline constexpr int kSliceBits = 7;
inline constexpr int kShifts = 2 * kSlices - 1;
inline constexpr int kMmaK = 32;      // the int8 mma's K, in both forms: head_dim is padded to it
inline constexpr int kInt8Pass = 64;  // heads per pass

// Slices as [slice][row][head (padded to passes of 64)][dim (padded to 32)] for q and
// [slice][key][dim] for k; padding and non-finite codes are 0.
struct int8_operands {
  const std::int8_t* q = nullptr;
  const std::int8_t* k = nullptr;
  std::int64_t heads = 0, dim = 0;  // padded
  double unit = 0;                  // u_q u_k
};

// The Hopper form of the integer engine (exact_wgmma.cu; NVIDIA sm_90a builds only).
// exact_wgmma_unsupported says why it cannot take slices of `padded_dim` bytes a row on this
// device and build, or nullptr; launch_exact_tiles_wgmma queues it on the default stream for
// e.row_count rows and the problem's keys, after the slices and prepare_rows/prepare_keys.
const char* exact_wgmma_unsupported(std::int64_t padded_dim);
void launch_exact_tiles_wgmma(const exact_args& e, const int8_operands& s);

// A modelled centre (centre_kernel.hip): every dot the instruction model's. launch_centre_tiles
// queues it for e.row_count rows and the problem's keys, after prepare_rows/prepare_keys, where
// centre_unsupported (exact_device.hpp) allows, and says which form of the model's steps it took.
const char* launch_centre_tiles(const exact_args& e, const model::chain_rule& rule);

}  // namespace mqa::gpu
