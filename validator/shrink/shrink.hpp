// `mqacheck shrink`: a failing problem cut down to a small one that still shows the same
// finding class, by delta debugging (Zeller and Hildebrandt, "Simplifying and Isolating
// Failure-Inducing Input", 2002) over each dimension in turn: rows, keys, then heads and head_dim
// where the kernel is re-run (a cut output has no values for fewer heads), then rows and keys
// again, until a round removes nothing. Within a dimension, complements are tried: drop one of n
// chunks; on success keep going with n - 1 chunks, else split finer, down to single indices; the
// result is 1-minimal (no single index of any dimension can go) unless the candidate budget ran out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "validator/cut/cut.hpp"

namespace mqa::shrink {

// Does the problem cut to this selection still show the finding?
using still_fails = std::function<bool(const cut::selection&)>;

struct plan {
  bool heads = false, dims = false;  // rows and keys always
  // head_dim is cut in whole groups of this many elements (a matrix instruction's k-step), so
  // that the cut stays a problem the declared instruction takes.
  std::int64_t dim_group = 1;
  std::size_t max_candidates = 4000;
  // Tried first: the row of the finding's first element alone, which often is all it needs.
  std::int64_t focus_row = -1;
};

struct outcome {
  cut::selection kept;
  std::size_t candidates = 0;  // selections tested
  bool budget_ran_out = false;
};

// `start` must fail; the result fails too (it is `start` or a selection `test` said true of).
outcome minimize(const cut::selection& start, const still_fails& test, const plan& p);

}  // namespace mqa::shrink
