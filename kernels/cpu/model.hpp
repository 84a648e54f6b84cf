// One CPU kernel, parameterised: the arithmetic models (how a GPU kernel rounds) and the planted
// bugs of docs/bug-classes.md are settings of the same loop, so a mutant differs from the
// correct model by exactly the knob its bug turns. Plain loops, like CUTLASS's host reference:
// clarity over speed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>

#include "kernels/variant.hpp"
#include "reference/bounds/arithmetic.hpp"
#include "reference/exact/logits.hpp"

namespace mqa::kernels::cpu {

// Owned copies of a problem's arrays, for the planted bugs that corrupt inputs as a producer would.
struct owned_problem {
  std::vector<std::uint8_t> q, k;
  std::vector<float> k_scale, weights;
  std::vector<std::int32_t> ks, ke;
  std::vector<std::uint8_t> q_block_scale, k_block_scale;  // e2m1fn operands
  exact::problem view;  // points into the vectors above

  explicit owned_problem(const exact::problem& p);
  void refresh_view();
};

enum class outside_fill : std::uint8_t { minus_inf, zero, nothing };

struct model_config {
  bounds::dot_accumulator dot = bounds::dot_accumulator::fp32;
  int dot_chunk = 0;             // fp32: sum chunks of this many products first (MFMA-like), 0: sequential
  std::int64_t promote_every = 0;  // modelled dots: a fresh MMA chain every this many elements (DeepGEMM)
  bool pairwise_heads = false;   // fp32 head sum as a pairwise tree instead of left to right
  // > 0: heads summed in this many lanes (head h in lane h mod lanes), each lane's partial sum times
  // k_scale, the scaled partials added: DeepGEMM sm90's per-lane reduction (scale after head sum).
  std::int64_t head_lanes = 0;
  bounds::scale_placement scale = bounds::scale_placement::after_head_sum;
  exact::relu_rule relu = exact::relu_rule::keeps_nan;
  // bfloat16 logits (DeepGEMM's logits_dtype): each result rounded to bfloat16 as stored.
  bounds::logits_precision logits = bounds::logits_precision::fp32;
  // Relative columns (DeepGEMM's max_seqlen_k > 0): key j of row i at column j - ks[i].
  bool relative_columns = false;

  // Planted bugs (all off in a correct model).
  std::function<void(owned_problem&)> corrupt_inputs;                     // producer-side bugs
  std::function<exact::window(const exact::problem&, std::int64_t)> window_of;  // default: clamped_window
  outside_fill outside = outside_fill::minus_inf;
  bool skip_empty_rows = false;         // return early on rows with nothing to see
  std::int64_t tail_block = 0;          // >0: the last partial block of this many columns is never stored
  std::int64_t offset_limit_bytes = 0;  // >0: byte offsets wrap modulo this (a 32-bit offset, scaled down)
  bool head_order_varies = false;       // head-sum order depends on the launch: a race's footprint
  // Subtle arithmetic bugs, each small enough to hide under a loose bound (matrix-unit contracts).
  std::int64_t dropped_head = -1;   // this head's term never reaches the head sum (>= heads: the last head)
  std::int64_t dot_length = 0;      // > 0: each dot stops after this many elements; < 0: this many short of head_dim
  float weight_factor = 1.0f;       // every weight multiplied by this (1.001: off by 1e-3)
  float scale_factor = 1.0f;        // every k_scale multiplied by this
  bool dot_to_bf16 = false;         // the dot rounded to bfloat16 before relu
  bool head_sum_to_bf16 = false;    // bf16 logits rounded twice: the head sum stored as bfloat16 before k_scale
  bool fp4_scale_per_token = false;  // e2m1fn: each token's first block scale applied to all its 32-blocks
};

// Where a run restricted to some rows and keys writes (the diagnosis re-runs a planted bug on a
// sample of a large problem, validator/diagnose): [rows.size(), keys.size()], dense.
struct sampled_output {
  std::span<const std::int64_t> rows, keys;  // ascending, in range
  float* data = nullptr;
};

// Runs the model on `p` into `out`. With `only`, the work is restricted to only->rows x only->keys
// and every store lands in only->data instead of out.data (`out` still gives the layout, m and
// stride, that store offsets are computed in, so a wrapped offset lands where it would); a store
// to an element outside the sample is dropped.
launch_report run_model(const model_config& config, const exact::problem& p, const output_view& out,
                        int run_index, const sampled_output* only = nullptr);

}  // namespace mqa::kernels::cpu
