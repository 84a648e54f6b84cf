// The rows a modelled contract's centre leaves out. Where no GPU computes the centre, the CPU
// computes it for a sample of the rows past its budget (judge::centre_rows: 32 of 8192 at the
// production shape), and only those rows are judged against the bound. The others are judged
// here for what needs no centre, so that an unwritten block of rows, a mask error or a NaN
// confined to them is not missed:
//   - outside the window under a clean contract: the poison (`unwritten`, where the output was
//     poisoned) and any value but -inf (`mask-leak`, and `mask-shift` with the judged rows' edges);
//   - inside the window: the poison (`unwritten`), and where no order the contract allows can
//     overflow (below), a NaN (`nan`), +inf (`inf`) and -inf: `mask-hole` where the row's -inf keys
//     sit at its window's edges, else `inf` (no centre's sign is known here; the judged rows call
//     -inf at an interior key `mask-hole` where its centre is not negative, `inf` where it is).
// No order overflows where the element's inputs (the row's q values and weights, the key's values
// and scale) are finite and, with a = sum_h |w_h| sum_d |q_hd| * max_d |k_d| * |s| (an upper bound
// of the centre's magnitude A and of |centre|, with room for a model's dot rounded above sum_d
// |q_d k_d| and for rounded weights), a plus the contract's allowance stays below the output's
// overflow threshold and the contract's largest intermediate (reference/bounds: partial head sums
// before k_scale, k_scale times a weight or a dot, ...) below float32's. Both grow with a and A,
// so where this excludes overflow the judged rows' test (allowance_at) would too, and a NaN or an
// infinity there is beyond the allowance. Elsewhere only the poison is judged inside the window.
// A finding first seen in the window here has no centre value at its first element:
// finding::expected_known is false (judge::finish computes it).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "reference/bounds/error_bound.hpp"
#include "validator/compare/allowance.hpp"
#include "validator/compare/finding.hpp"
#include "validator/compare/heat_map.hpp"
#include "validator/compare/mask_shape.hpp"
#include "validator/compare/subject.hpp"
#include "validator/compare/tally.hpp"

namespace mqa::compare {

struct outside_centre {
  std::array<tally, kFindingClasses> tallies{};
  std::vector<mask_shape> shapes;  // per row, in the rows' order
  std::int64_t mask_leaks = 0, mask_holes = 0;
  heat_map heat;  // the unwritten, non-finite and mask counts of the rows' cells
};

// Rows `rows` (ascending) of in.output under in.contract, whose bound is `bound`; `keys` the prefill
// problem's key figures (null for a paged problem: its requests' are computed where a row needs them).
outside_centre judge_outside_centre(const subject& in, const bounds::error_bound& bound, const key_figures* keys,
                                    std::span<const std::int64_t> rows);

}  // namespace mqa::compare
