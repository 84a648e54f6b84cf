// The vocabulary of declared arithmetic: how a kernel accumulates, which the error bound reads.
// Every name below is also what `--accumulate`, `--scale`, `--weights` and `--logits-dtype` accept and what a
// suite's variant declarations say; one table per enum (arithmetic.cpp) holds the spellings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mqa::bounds {

// How the D-term dot product q . k is accumulated.
enum class dot_accumulator : std::uint8_t {
  exact,           // no rounding before relu (int/float64 accumulation of exact products)
  fp32,            // exact products summed in float32, any order
  fp22_truncated,  // a truncating fp8 MMA of unknown shape: 13 fraction bits kept per step, any order
  bf16,            // summed in float32, then rounded to bfloat16 before relu
  sm90_wgmma,      // Hopper wgmma.m64nNk32 e4m3/e5m2 chained over D, bit-exact model (reference/mma)
  gfx942_mfma,     // CDNA3 v_mfma_f32_16x16x32_fp8_fp8 chained over D, bit-exact model (not validated on hardware)
};

// How the H-term head sum is accumulated ("exact": exactly, then rounded to float32 once).
enum class head_accumulator : std::uint8_t { exact, fp32 };

// Where k_scale multiplies in. The operation applies it after relu; kernels differ in where:
//   after_head_sum  to the head sum, or to partial head sums that are then added (DeepGEMM sm90's
//                   per-lane partials), or to each weight first: every order with k_scale after relu
//   into_weights    fl(k_scale * w_h) first, then w' * relu(dot) summed over heads (only that order)
//   before_relu     fl(k_scale * dot) then relu (vLLM/AITER Triton): equals the operation only for k_scale > 0
//   into_keys_bf16  k * k_scale rounded to bfloat16 before the dot (a torch fallback that dequantizes k
//                   into bf16 and runs a bf16 einsum): before relu too, so also only for k_scale > 0
enum class scale_placement : std::uint8_t { after_head_sum, before_relu, into_weights, into_keys_bf16 };

// The precision the weights are rounded to (nearest even) before the head sum.
enum class weight_precision : std::uint8_t { fp32, bf16, fp16 };

// The dtype of the output (DeepGEMM's logits_dtype): float32, or the float32 result
// rounded to bfloat16 (nearest even) as it is stored.
enum class logits_precision : std::uint8_t { fp32, bf16 };

// A dot accumulator whose every bit is modelled (reference/mma): the verdict compares against the
// model's dots instead of bounding a rounding error.
bool is_modelled(dot_accumulator a);

std::string_view to_string(dot_accumulator a);
std::string_view to_string(head_accumulator a);
std::string_view to_string(scale_placement s);
std::string_view to_string(weight_precision w);
std::string_view to_string(logits_precision l);
std::optional<dot_accumulator> parse_dot_accumulator(std::string_view name);
std::optional<scale_placement> parse_scale_placement(std::string_view name);
std::optional<weight_precision> parse_weight_precision(std::string_view name);
std::optional<logits_precision> parse_logits_precision(std::string_view name);
// "exact, fp32, ..." for messages that say what is accepted.
std::string accepted_dot_accumulators();
std::string accepted_scale_placements();
std::string accepted_weight_precisions();
std::string accepted_logits_precisions();

}  // namespace mqa::bounds
