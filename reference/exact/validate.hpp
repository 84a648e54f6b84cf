// Input checks: every inconsistency is a std::invalid_argument that names the operand, what it
// has and what was expected.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/exact/logits.hpp"

namespace mqa::exact::detail {

void check_problem(const problem& p);

// The rows to compute: all rows for an empty request, else the request once checked (strictly
// ascending, each in [0, m)).
std::vector<std::int64_t> resolve_rows(const problem& p, const std::vector<std::int64_t>& requested);

}  // namespace mqa::exact::detail
