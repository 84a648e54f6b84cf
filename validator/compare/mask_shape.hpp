// What a row's mask errors look like: leaks (finite values outside [ks, ke)) and holes (-inf
// inside) that sit at the window's edges are a displaced edge; a displacement seen alike in every
// row that can show it is the `mask-shift` finding (ke read as inclusive, ks off by one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "finding.hpp"
#include "reference/exact/logits.hpp"

namespace mqa::compare {

// Row i's window as the comparator judges it: clamped to [0, n), an empty one placed at ks
// (clamped), where a displaced start would show.
struct judged_window {
  std::int64_t begin = 0, end = 0;
};
judged_window judged_window_of(const exact::problem& p, std::int64_t i);

struct mask_shape {
  bool regular = true;  // the leaks and holes are consistent with displaced window edges
  std::int64_t start_shift = 0, end_shift = 0;  // the displacement this row shows (0: none)
  std::int64_t begin = 0, end = 0;              // the row's clamped window [begin, end)
  bool whole_window_dark = false;  // every key of a nonempty window is -inf: any shift of at least its length
};

// leaks and holes ascending, window [b, e) (e == b: an empty window).
mask_shape shape_of(const std::vector<std::int64_t>& leaks, const std::vector<std::int64_t>& holes, std::int64_t b,
                    std::int64_t e);

// The holes are a prefix and/or a suffix of [b, e): a displaced edge, not an arithmetic result.
bool edge_shaped(const std::vector<std::int64_t>& holes, std::int64_t b, std::int64_t e);

// One displacement that every row shows as far as it can: a row shows an end moved by +2 as +1
// when its window ends at n - 1, a start moved by -3 as -1 when it begins at 1; an empty window
// shows nothing or what it can of the shift, and is never the only evidence. Empty when the rows
// disagree, some row's errors are not edge-shaped, or no nonempty window shows a displacement.
std::optional<window_shift> common_shift(const std::vector<mask_shape>& rows, std::int64_t n);

// "window end shifted by +1 (ke read as inclusive)".
std::string describe(const window_shift& s);

}  // namespace mqa::compare
