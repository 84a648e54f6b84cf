// The vocabulary of declared arithmetic: how a kernel accumulates, which the error bound reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mqa::bounds {

// How the D-term dot product q . k is accumulated.
enum class dot_accumulator : std::uint8_t {
  exact,           // no rounding before relu (int/float64 accumulation of exact products)
  fp32,            // exact products summed in float32, any order
  fp22_truncated,  // Hopper fp8 MMA: 13 fraction bits kept, the rest truncated, per addition
  bf16,            // summed in float32, then rounded to bfloat16 before relu
};

// How the H-term head sum is accumulated ("exact": exactly, then rounded to float32 once).
enum class head_accumulator : std::uint8_t { exact, fp32 };

// Where k_scale multiplies in. The operation applies it after the head sum; kernels that fold it
// into the dot product apply it before relu, which agrees only for k_scale > 0.
enum class scale_placement : std::uint8_t { after_head_sum, before_relu };

std::string_view to_string(dot_accumulator a);
std::string_view to_string(head_accumulator a);
std::string_view to_string(scale_placement s);
std::optional<dot_accumulator> parse_dot_accumulator(std::string_view name);

}  // namespace mqa::bounds
