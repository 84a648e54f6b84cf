#include "validator/verdict/contract_change.hpp"

#include <fmt/core.h>

#include "reference/bounds/accumulators.hpp"
#include "reference/bounds/error_bound.hpp"

namespace mqa::verdict {
namespace {

using kernels::contract;

// The coefficients of a bound (error_bound::at), each multiplying a non-negative magnitude.
struct coefficient {
  const char* name;
  double bounds::error_bound::*field;
};
constexpr coefficient kCoefficients[] = {
    {"relative", &bounds::error_bound::relative},
    {"per k_scale", &bounds::error_bound::per_scale},
    {"per weight", &bounds::error_bound::per_weight},
    {"per dot", &bounds::error_bound::per_dot},
    {"per scaled small dot", &bounds::error_bound::per_scaled_small_dot},
    {"per weighted q", &bounds::error_bound::per_weighted_q},
    {"per value", &bounds::error_bound::per_value},
    {"absolute", &bounds::error_bound::absolute},
    // A larger threshold counts more weights among those that may round to a subnormal.
    {"small weights below", &bounds::error_bound::small_weight_below},
};

// The centre the comparator measures from: the exact value, or the modelled instruction's dots
// (with their promotion interval). Two contracts with different centres bound different things.
bool same_centre(const contract& a, const contract& b) {
  const bool modelled = bounds::is_modelled(a.dot) || bounds::is_modelled(b.dot);
  return !modelled || (a.dot == b.dot && a.promote_every == b.promote_every);
}

bool excuses_nonpositive_scale(bounds::scale_placement s) {
  return s == bounds::scale_placement::before_relu || s == bounds::scale_placement::into_keys_bf16;
}

// What a contract excuses besides its bound, each a way `now` lets pass what `baseline` judged.
struct excuse {
  bool (*weaker)(const contract& baseline, const contract& now);
  const char* what;
};
constexpr excuse kExcuses[] = {
    {[](const contract& b, const contract& n) { return !same_centre(b, n); },
     "judged against another centre (a modelled dot accumulator or its promotion interval changed)"},
    {[](const contract& b, const contract& n) {
       return !excuses_nonpositive_scale(b.scale) && excuses_nonpositive_scale(n.scale);
     },
     "k_scale applied before relu: keys with k_scale <= 0 excused"},
    {[](const contract& b, const contract& n) {
       return b.relu == exact::relu_rule::keeps_nan && n.relu == exact::relu_rule::fmax;
     },
     "relu by fmax: NaN dots excused"},
    {[](const contract& b, const contract& n) {
       return b.mask == kernels::masking::clean && n.mask == kernels::masking::dont_care;
     },
     "masking dont-care: values outside the windows excused"},
    {[](const contract& b, const contract& n) {
       return b.columns == kernels::columns_layout::absolute && n.columns == kernels::columns_layout::relative;
     },
     "relative columns: nothing outside the windows judged"},
    {[](const contract& b, const contract& n) { return b.deterministic && !n.deterministic; },
     "not deterministic: launches allowed to differ"},
};

std::optional<std::string> larger_bound(const contract& baseline, const contract& now, const judged_shape& s) {
  const bounds::error_bound was = bounds::derive(baseline.arithmetic(), s.head_dim, s.heads);
  const bounds::error_bound is = bounds::derive(now.arithmetic(), s.head_dim, s.heads);
  if (is.bit_exact) return std::nullopt;
  if (was.bit_exact) return fmt::format("the correctly rounded value no longer promised (head_dim {}, heads {})", s.head_dim, s.heads);
  for (const auto& c : kCoefficients)
    if (is.*c.field > was.*c.field)
      return fmt::format("a larger error bound: {} {:.3g} -> {:.3g} (head_dim {}, heads {})", c.name, was.*c.field,
                         is.*c.field, s.head_dim, s.heads);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> contract_weakened(const contract& baseline, const contract& now,
                                             std::span<const judged_shape> shapes) {
  const std::string change = fmt::format("'{}' -> '{}'", kernels::describe(baseline), kernels::describe(now));
  for (const auto& e : kExcuses)
    if (e.weaker(baseline, now)) return fmt::format("{}: {}", change, e.what);
  for (const auto& s : shapes)
    if (const auto why = larger_bound(baseline, now, s)) return fmt::format("{}: {}", change, *why);
  return std::nullopt;
}

std::optional<std::string> contract_weakened(const kernels::contract_line& baseline, const kernels::contract_line& now,
                                             std::span<const judged_shape> shapes) {
  if (const auto why = contract_weakened(baseline.declared, now.declared, shapes)) return why;
  if (!baseline.mask_from_cases && baseline.declared.mask == kernels::masking::clean && now.mask_from_cases)
    return fmt::format("'{}' -> '{}{}': masking left to the cases: cases with clean_logits = false excused outside "
                       "their windows",
                       kernels::describe(baseline.declared), kernels::describe(now.declared), kernels::kMaskFromCasesNote);
  return std::nullopt;
}

}  // namespace mqa::verdict
