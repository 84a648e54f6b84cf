// The rows a modelled contract's centre leaves out. Where no GPU computes the centre, the CPU
// computes it for a sample of the rows past its budget (judge::centre_rows: 32 of 8192 at the
// production shape), and only those rows are judged against the bound. The others are judged
// here for what needs no centre, so that an unwritten block of rows, a mask error or a NaN
// confined to them is not missed:
//   - outside the window under a clean contract: the poison (`unwritten`) and any value but -inf
//     (`mask-leak`, and `mask-shift` with the judged rows' edges);
//   - inside the window: the poison (`unwritten`), and where the element's value is a finite
//     number under every arithmetic a contract can declare (below), a NaN (`nan`), +inf (`inf`)
//     and -inf: `mask-hole` where the row's -inf keys sit at its window's edges, else `inf`, as
//     the judged rows call -inf at interior keys whose centre is negative.
// An element's value is such a number when its inputs (the row's q values and weights, the key's
// values and scale) are finite and its magnitude bound sum_h |w_h| sum_d |q_hd| * max_d |k_d| *
// |s| is at most 2^120: every partial result of the exact operation is then at most that, the
// declared arithmetic's are within a small factor of it (each bound is a small multiple of the
// magnitude), so nothing reaches float32's overflow (2^128) or makes a NaN, and a kernel's NaN or
// infinity there exceeds any allowance. Elsewhere only the poison is judged inside the window.
// A finding first seen here has no centre value at its first element: its expected value is a
// NaN for the in-window classes (judge::finish computes the centre there), -inf outside.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "validator/compare/allowance.hpp"
#include "validator/compare/finding.hpp"
#include "validator/compare/heat_map.hpp"
#include "validator/compare/mask_shape.hpp"
#include "validator/compare/subject.hpp"
#include "validator/compare/tally.hpp"

namespace mqa::compare {

// 2^120: the largest magnitude bound at which an element's value is judged without a centre.
inline constexpr double kCentreFreeMagnitude = 0x1p120;

struct outside_centre {
  std::array<tally, kFindingClasses> tallies{};
  std::vector<mask_shape> shapes;  // per row, in the rows' order
  std::int64_t mask_leaks = 0, mask_holes = 0;
  heat_map heat;  // the unwritten, non-finite and mask counts of the rows' cells
};

// Rows `rows` (ascending) of in.output under in.contract; `keys` the prefill problem's key
// figures (null for a paged problem: its requests' are computed where a row needs them).
outside_centre judge_outside_centre(const subject& in, const key_figures* keys, std::span<const std::int64_t> rows);

}  // namespace mqa::compare
