// Findings: what is wrong with an output, in classes that stay stable across releases so that CI
// gates and dashboards can key on them (docs/design.md "Findings").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/names/names.hpp"

namespace mqa::compare {

enum class finding_class : std::uint8_t {
  mask_leak,         // a finite value (or NaN/+inf) outside the window under a clean contract
  mask_hole,         // -inf inside the window
  mask_shift,        // the window displaced by the same amount at its start or end in every row
  nan,               // NaN where the exact value is a number
  inf,               // +-inf where the exact value is finite and the bound excludes overflow
  error_bound,       // farther from the exact value than the declared arithmetic allows
  scale_factor,      // in-window values off by one constant power of two (a format mix-up)
  topk_mismatch,     // top-k set differs from the exact one beyond ties the bound allows
  unwritten,         // the runner's poison value survived
  nondeterministic,  // two launches gave different bits
  out_of_bounds,     // a guard band around the output was overwritten
  // A top-k index kernel's output (validator/compare/topk_indices.hpp); counts are rows.
  topk_duplicate,       // one key twice in a row's indices
  topk_outside_window,  // an index (not the -1 padding) outside the row's window [ks, ke)
  topk_padding,         // -1 padding missing where the window is shorter than k, or where a key was due
  topk_inadmissible,    // a dropped key's exact lower end above a kept key's upper end
  topk_unsorted,        // out of the order the convention promises, beyond ties the bounds allow
};
inline constexpr std::size_t kFindingClasses = 16;

// The stable names (reports, --must-produce, --finding), read both ways by reference/names/names.hpp;
// names::accepted gives "mask-leak, mask-hole, ..." for the "accepted:" part of an error message.
inline constexpr names::table<finding_class, kFindingClasses> kFindingClassNames{{
    {finding_class::mask_leak, "mask-leak"},
    {finding_class::mask_hole, "mask-hole"},
    {finding_class::mask_shift, "mask-shift"},
    {finding_class::nan, "nan"},
    {finding_class::inf, "inf"},
    {finding_class::error_bound, "error-bound"},
    {finding_class::scale_factor, "scale-factor"},
    {finding_class::topk_mismatch, "topk-mismatch"},
    {finding_class::unwritten, "unwritten"},
    {finding_class::nondeterministic, "nondeterministic"},
    {finding_class::out_of_bounds, "out-of-bounds"},
    {finding_class::topk_duplicate, "topk-duplicate"},
    {finding_class::topk_outside_window, "topk-outside-window"},
    {finding_class::topk_padding, "topk-padding"},
    {finding_class::topk_inadmissible, "topk-inadmissible"},
    {finding_class::topk_unsorted, "topk-unsorted"},
}};
std::string_view to_string(finding_class c);

// The most likely cause of a finding, as validator/diagnose reproduced it: a planted-bug setting
// of mqacheck's own arithmetic model (or a contract edit) that gives the kernel's output on the
// elements the finding covers. Absent unless something reproduced it.
struct likely_cause {
  std::string cause;     // stable id of the hypothesis: "inclusive-end", "fnuz-reinterpret-k", ...
  bool bit_for_bit = false;  // reproduced bit for bit (else within the bound of the contract it names)
  std::string sentence;  // "matches a window end read as inclusive (key ke written): reproduced bit for bit on 32 rows"
};

// A window edge displaced alike in every row that can show it (the mask-shift finding's shape).
struct window_shift {
  std::int64_t start = 0, end = 0;  // positive: later; negative: earlier
  bool operator==(const window_shift&) const = default;
};

struct finding {
  finding_class kind = finding_class::error_bound;
  std::int64_t count = 0;
  std::int64_t first_row = -1, first_col = -1;  // lexicographically first (i, j)
  std::uint32_t expected_bits = 0, actual_bits = 0;  // float32 bits at (first_row, first_col)
  double bound = 0;    // allowed |error| at the first element, where one applies
  std::string detail;  // the kernel engineer's sentence: what it looks like, what it suggests
  std::optional<likely_cause> diagnosis;
  // False where the comparator had no centre at the first element (a row outside a modelled
  // contract's sampled centre: outside_centre.hpp); judge::finish computes the expected value there.
  bool expected_known = true;
  // mask-shift only: which edge moved and by how much. What a cut of the case must keep showing
  // (shrink): a +4 overrun cut to +1 reads, and is diagnosed, as an inclusive end.
  std::optional<window_shift> shift;
};

}  // namespace mqa::compare
