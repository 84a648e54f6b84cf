// What a variant declares about itself (docs/contracts.md).
// The validator derives every error bound and masking expectation from this record; nothing
// else about a kernel is trusted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "reference/bounds/error_bound.hpp"
#include "reference/exact/logits.hpp"
#include "reference/fp8/format.hpp"
#include "reference/names/names.hpp"

namespace mqa::kernels {

using bounds::dot_accumulator;
using bounds::head_accumulator;
using bounds::logits_precision;
using bounds::scale_placement;
using bounds::weight_precision;

// Outside the window: -inf (clean) or anything (dont_care).
enum class masking : std::uint8_t { clean, dont_care };

// Where row i's key j is written: at column j of an [m, >= n] output (absolute), or, as
// DeepGEMM does with max_seqlen_k > 0, at column j - ks[i] of an [m, >= max_seqlen_k] output
// (relative; nothing outside the windows is then defined, so masking is dont_care).
enum class columns_layout : std::uint8_t { absolute, relative };

// The declared arithmetic (dot and head accumulators, k_scale placement, weight and output
// precision; bounds::arithmetic) and everything else a variant declares. The output dtype (the
// arithmetic's `logits`, DeepGEMM's logits_dtype): bfloat16 outputs are judged with their last
// rounding in the bound and ULPs counted in bfloat16 units.
struct contract : bounds::arithmetic {
  // Modelled dots (sm90-wgmma, gfx942-mfma): a fresh MMA chain every this many elements, its result
  // added into a float32 accumulator (DeepGEMM's promotion); 0: one chain over head_dim.
  std::int64_t promote_every = 0;
  exact::relu_rule relu = exact::relu_rule::keeps_nan;
  masking mask = masking::clean;
  columns_layout columns = columns_layout::absolute;
  bool deterministic = true;
  // Formats the variant consumes; nullopt: whatever the case provides.
  std::optional<fp8::format> q_format, k_format;

  const bounds::arithmetic& arithmetic() const { return *this; }
};

// The contract of a kernel known by its dot accumulator alone, with the head sum its row comes with
// (reference/bounds/accumulators.hpp): an exact dot comes with an exact head sum (the correctly
// rounded value, 0 ULP); any other with a float32 head sum.
contract declared_arithmetic(dot_accumulator dot, exact::relu_rule relu = exact::relu_rule::keeps_nan);

// The spellings (--mask, --columns), read both ways by reference/names/names.hpp.
inline constexpr names::table<masking, 2> kMaskingNames{{{masking::clean, "clean"}, {masking::dont_care, "dont-care"}}};
inline constexpr names::table<columns_layout, 2> kColumnsLayoutNames{
    {{columns_layout::absolute, "absolute"}, {columns_layout::relative, "relative"}}};
std::string_view to_string(masking m);
std::string_view to_string(columns_layout c);
std::string describe(const contract& c);  // one line: "dot fp32, heads fp32, k_scale after head sum, ..."

}  // namespace mqa::kernels
