// The vocabulary of declared arithmetic: how a kernel accumulates, which the error bound reads.
// Every name below is also what `--accumulate`, `--scale`, `--weights` and `--logits-dtype` accept and what a
// suite's variant declarations say; one table per enum (below, and accumulators.hpp's rows for the
// dot accumulators) holds the spellings.
#pragma once

#include <cstdint>
#include <string_view>

#include "reference/names/names.hpp"

namespace mqa::bounds {

// How the D-term dot product q . k is accumulated.
enum class dot_accumulator : std::uint8_t {
  exact,           // no rounding before relu (int/float64 accumulation of exact products)
  fp32,            // exact products summed in float32, any order
  fp22_truncated,  // a truncating fp8 MMA of unknown shape: 13 fraction bits kept per step, any order
  bf16,            // summed in float32, then rounded to bfloat16 before relu
  sm90_wgmma,      // Hopper wgmma.m64nNk32 e4m3/e5m2 chained over D, bit-exact model (reference/mma)
  gfx942_mfma,     // CDNA3 v_mfma_f32_16x16x32_fp8_fp8 chained over D, bit-exact model (as MMA-Sim; not on hardware)
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
// model's dots instead of bounding a rounding error. Read from its row (accumulators.hpp).
bool is_modelled(dot_accumulator a);

// The spellings, one table per enum, read both ways by reference/names/names.hpp (names::parse,
// names::accepted for "accepted: ..." messages). The dot accumulators' names are in their rows
// (accumulators.hpp).
inline constexpr names::table<head_accumulator, 2> kHeadAccumulatorNames{{
    {head_accumulator::exact, "exact"},
    {head_accumulator::fp32, "fp32"},
}};
inline constexpr names::table<scale_placement, 4> kScalePlacementNames{{
    {scale_placement::after_head_sum, "after-head-sum"},
    {scale_placement::before_relu, "before-relu"},
    {scale_placement::into_weights, "into-weights"},
    {scale_placement::into_keys_bf16, "into-keys-bf16"},
}};
inline constexpr names::table<weight_precision, 3> kWeightPrecisionNames{{
    {weight_precision::fp32, "fp32"},
    {weight_precision::bf16, "bf16"},
    {weight_precision::fp16, "fp16"},
}};
inline constexpr names::table<logits_precision, 2> kLogitsPrecisionNames{{
    {logits_precision::fp32, "fp32"},
    {logits_precision::bf16, "bf16"},
}};

std::string_view to_string(dot_accumulator a);
std::string_view to_string(head_accumulator a);
std::string_view to_string(scale_placement s);
std::string_view to_string(weight_precision w);
std::string_view to_string(logits_precision l);

}  // namespace mqa::bounds
