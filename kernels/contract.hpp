// What a variant declares about itself (DESIGN.md "Variants and their declared arithmetic").
// The validator derives every error bound and masking expectation from this record; nothing
// else about a kernel is trusted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "reference/exact/logits.hpp"
#include "reference/fp8/format.hpp"

namespace mqa::kernels {

// How the D-term dot product q . k is accumulated.
enum class dot_accumulator : std::uint8_t {
  exact,           // no rounding before relu (int/float64 accumulation of exact products)
  fp32,            // exact products summed in float32, any order
  fp22_truncated,  // Hopper fp8 MMA: 13 fraction bits kept, the rest truncated, per addition
  bf16,            // summed in float32, then rounded to bfloat16 before relu
};

// How the H-term head sum is accumulated.
enum class head_accumulator : std::uint8_t { exact, fp32 };

// Where k_scale multiplies in. The operation applies it after the head sum; kernels that fold it
// into the dot product apply it before relu, which agrees only for k_scale > 0.
enum class scale_placement : std::uint8_t { after_head_sum, before_relu };

// Outside the window: -inf (clean) or anything (dont_care).
enum class masking : std::uint8_t { clean, dont_care };

struct contract {
  dot_accumulator dot = dot_accumulator::fp32;
  head_accumulator heads = head_accumulator::fp32;
  scale_placement scale = scale_placement::after_head_sum;
  exact::relu_rule relu = exact::relu_rule::keeps_nan;
  masking mask = masking::clean;
  bool deterministic = true;
  // Formats the variant consumes; nullopt: whatever the case provides.
  std::optional<fp8::format> q_format, k_format;
};

std::string_view to_string(dot_accumulator a);
std::string_view to_string(head_accumulator a);
std::string_view to_string(scale_placement s);
std::string_view to_string(masking m);
std::optional<dot_accumulator> parse_dot_accumulator(std::string_view name);
std::optional<masking> parse_masking(std::string_view name);
std::string describe(const contract& c);  // one line: "dot fp32, heads fp32, k_scale after head sum, ..."

}  // namespace mqa::kernels
