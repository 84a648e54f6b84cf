// The top-k oracle. The exact top-k of a row is ambiguous only where values tie; a kernel's top-k
// may differ from it only by swaps its error bound makes indistinguishable: a key j the kernel
// kept in place of an exact-top-k key e is excused when j's exact value plus its bound reaches
// e's exact value minus e's bound. Whole sets are excused when such swaps pair every intruder
// with a distinct missing key; pairing both lists in ascending order decides that (an exchange
// argument: if the smallest intruder cannot cover the smallest missing key, nothing can).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mqa::topk {

struct keyed {
  std::int64_t index;
  double exact;  // exact value (-inf outside the window)
  double bound;  // allowed |error| of the kernel at this key
};

// Indices of the k largest `values`, ascending (NaN ranks highest, as in torch.topk; ties go to
// the lower index).
std::vector<std::int64_t> largest(std::span<const float> values, std::int64_t k);

struct comparison {
  std::int64_t k = 0;
  std::int64_t overlap = 0;       // |kernel ∩ exact|
  bool excused = true;            // every difference is a swap the bounds allow
  std::int64_t first_intruder = -1;  // lowest index of an intruder that is not excused
};

// kernel_set and exact_set: the two top-k index sets of one row (same size k).
// lookup(index) gives the exact value and bound of any key of the row.
template <class Lookup>
comparison compare_sets(std::span<const std::int64_t> kernel_set, std::span<const std::int64_t> exact_set,
                        Lookup&& lookup);

}  // namespace mqa::topk

#include "topk_impl.hpp"
