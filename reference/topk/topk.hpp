// The top-k oracle. The exact top-k of a row is ambiguous only where values tie; a kernel's top-k
// may differ from it only where its error bound makes keys indistinguishable. Precisely: the
// kernel's set K is excused when some values, each within its key's bound of the exact value,
// rank K first, i.e. when one threshold t separates their intervals (interval.hpp):
//     min over kept keys of upper  >=  max over dropped keys of lower.
// (Necessary: a kept key's value <= its upper end, a dropped key's >= its lower end. Sufficient:
// put every kept key at its upper end, every dropped key at its lower end.)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/topk/interval.hpp"

namespace mqa::topk {

// A key as the top-k ranks it: the values it may take are interval_of(exact, bound).
struct keyed {
  std::int64_t index;
  double exact;  // exact value (-inf outside the window; NaN ranks highest, above +inf)
  double bound;  // allowed |error| of the kernel at this key (inf: an excused overflow)
};

// Indices of the k largest `values`, ascending (NaN ranks highest, as in torch.topk; ties go to
// the lower index).
std::vector<std::int64_t> largest(std::span<const float> values, std::int64_t k);

struct comparison {
  std::int64_t k = 0;
  std::int64_t overlap = 0;          // |kernel ∩ exact|, for recall
  bool excused = true;               // the kernel's set is a top-k of values its bounds allow
  std::int64_t first_intruder = -1;  // lowest kept index below the threshold, when not excused
};

// kernel_set and exact_set: the two top-k index sets of one row (same size k, ascending, as
// largest() gives them); candidates: every key the kernel could have kept; lookup(index) gives a
// key's exact value and bound.
template <class Lookup>
comparison compare_sets(std::span<const std::int64_t> kernel_set, std::span<const std::int64_t> exact_set,
                        std::span<const std::int64_t> candidates, Lookup&& lookup);

}  // namespace mqa::topk

#include "topk_impl.hpp"
