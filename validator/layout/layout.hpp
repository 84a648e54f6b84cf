// Windows: for each query row i the half-open key range [ks[i], ke[i]) it may see, as every
// layout of a case (cases/README.md) produces them. Pure functions of the case: the same case
// gives the same ks/ke everywhere.
#pragma once

#include <cstdint>
#include <vector>

#include "validator/case/case.hpp"

namespace mqa::layout {

struct windows {
  std::vector<std::int32_t> ks, ke;  // [m]
};

// The case's windows. The case must have passed cases::validate (its layout fits m and n).
windows make_windows(const cases::case_spec& c);

// Rows whose window clamped to [0, n) is empty (ks >= ke after clamping).
std::int64_t empty_rows(const windows& w, std::int64_t n);

// The longest clamped window.
std::int64_t longest_window(const windows& w, std::int64_t n);

// top-k's k when the case does not set it: min(2048, longest window), at least 1.
std::int64_t default_topk(const windows& w, std::int64_t n);

}  // namespace mqa::layout
