// The kernels' host-side entry points, as the runner calls them: one function per kernel
// family, the planted bug chosen at run time among compile-time instances. Plain C++: the
// runner's host code and the .hip files that define these both include it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "reference/gpu/operation.hpp"

namespace mqa::gpu {

enum class kernel_id : std::uint8_t {
  naive,        // one output element per thread (naive.hip)
  tiled,        // shared-memory tiles over heads x keys, blocks loop over key tiles (tiled.hip)
  mfma_gfx942,  // fp8 MFMA on gfx942 (mfma_gfx942.hip); built for HIP only
  wgmma_sm90,   // fp8 wgmma on Hopper (mqa_wgmma.cu); built for CUDA (sm_90a) only
  paged_naive,  // paged decode, one output element per thread (paged.hip)
  paged_tiled,  // paged decode, tiled.hip's blocks with keys gathered through the block table (paged.hip)
};

// One deliberate defect per mutant, each a one-place change to a correct kernel.
enum class planted_bug : std::uint8_t {
  none,
  window_end_inclusive,  // naive: j <= ke instead of j < ke (BUGCLASSES 11)
  offset32,              // tiled: int32 byte offset, negative offsets dropped as a buffer store does (17)
  tail_tile_dropped,     // tiled: N / tile key tiles instead of ceil(N / tile) (16)
  missing_barrier,       // tiled: no barrier between a stage's shared-memory fill and its use (20)
  atomic_head_order,     // tiled: head partials combined by shared-memory atomics in arrival order (20)
  row_past_end,          // tiled: the -inf fill also covers row m, one row past the output's end
  block_offset32,        // paged tiled: a block's byte offset in int32; past 2^31 bytes it reads zeros
                         // as an AMD buffer load does (ROCm/aiter#4774, vllm#52109)
};

// Enqueue one launch on the default stream over a.out (already poisoned by the runner). Throw
// std::invalid_argument for a bug the kernel family does not carry, std::runtime_error for a
// launch the runtime refuses.
void launch_naive(const logits_args& a, planted_bug bug);
void launch_tiled(const logits_args& a, planted_bug bug);
void launch_mfma_gfx942(const logits_args& a, planted_bug bug);
void launch_wgmma_sm90(const logits_args& a, planted_bug bug);
void launch_paged_naive(const paged_args& a, planted_bug bug);
void launch_paged_tiled(const paged_args& a, planted_bug bug);

// Whether this build carries the kernel (the MFMA one exists in HIP builds only, the wgmma one in
// CUDA builds only).
bool kernel_built(kernel_id id);
bool mfma_built();
bool wgmma_built();
// Why the wgmma kernel cannot run this problem on this device (shape, formats, not sm_90), or
// nullopt when it can.
std::optional<std::string> wgmma_unsupported(const logits_args& a);

}  // namespace mqa::gpu
