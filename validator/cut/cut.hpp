// A problem cut down to some of its rows, keys, heads and head_dim elements: what `mqacheck shrink`
// writes as a smaller bundle, and what the diagnosis judges when a problem is too large to re-run a
// model on whole.
//
// The operation is local: the exact logit at (i, j) depends on row i's q and weights, key j's k and
// k_scale, and the heads and dims kept. So with all heads and dims kept, the cut problem's exact
// value at (r, c) is the source's at (rows[r], keys[c]). Windows are remapped so that exactly the
// same kept keys stay inside each row's window (remap_bound): the window [ks, ke) of the source
// becomes the cut's [ks', ke') over the kept keys, and a window outside [0, n) stays outside
// [0, n') by as much, so every mask error and every out-of-range row keeps its shape.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/variant.hpp"
#include "reference/exact/logits.hpp"
#include "validator/inputs/inputs.hpp"

namespace mqa::cut {

// Indices kept per dimension: ascending, distinct, each in range.
struct selection {
  std::vector<std::int64_t> rows, keys, heads, dims;

  static selection everything(const exact::problem& p);
  bool empty() const { return rows.empty() || keys.empty() || heads.empty() || dims.empty(); }
};

// The cut problem: its own arrays, the source's formats.
struct problem {
  inputs::tensors arrays;
  fp8::format q_format = fp8::format::e4m3fn, k_format = fp8::format::e4m3fn;
  exact::problem view() const;  // borrows `arrays`
};

// Throws std::invalid_argument for a selection that is not ascending, distinct and in range.
problem cut_problem(const exact::problem& p, const selection& s);

// first, first + 1, ..., first + count - 1: every row (or key, head, dim) of a range.
std::vector<std::int64_t> consecutive(std::int64_t first, std::int64_t count);

// A source window bound v (ks or ke) as the cut problem's, for a source with n keys of which
// `keys` are kept: inside (0, n) the number of kept keys below v; v <= 0 unchanged; v >= n moved
// to n' + (v - n), n' = keys.size().
std::int32_t remap_bound(std::int32_t v, std::span<const std::int64_t> keys, std::int64_t n);

// [rows.size(), keys.size()], dense, from an output [m, stride].
std::vector<float> cut_output(const kernels::output_view& out, std::span<const std::int64_t> rows,
                              std::span<const std::int64_t> keys);

// The reference's (or a centre's) values at rows x keys; `rows` must be among r.rows. The result's
// rows are 0 .. rows.size() - 1, as the cut problem numbers them.
exact::result cut_result(const exact::result& r, std::int64_t n, std::span<const std::int64_t> rows,
                         std::span<const std::int64_t> keys);

}  // namespace mqa::cut
