// Relative output columns: with max_seqlen_k > 0 DeepGEMM writes row i's key ks[i] + c
// at column c of an [m, max_seqlen_k] output. The comparator judges absolute [m, n] outputs; these
// map a relative output onto one, so that a relative kernel is judged exactly as an absolute one
// (key by key, findings at key coordinates). Keys outside a row's window are not defined in a
// relative output: the contract is dont_care there.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/variant.hpp"
#include "reference/exact/logits.hpp"

namespace mqa::compare {

// The columns a relative output needs: the largest end - ks[i] over rows with a nonempty window
// (ks as given: a negative ks puts key 0 at column -ks), at least 1.
std::int64_t relative_width(const exact::problem& p);

// [m, n] row-major: each window key j of row i taken from column j - ks[i] of `relative` (which must
// be at least relative_width(p) wide), `fill` everywhere else.
std::vector<float> absolute_from_relative(const kernels::output_view& relative, const exact::problem& p, float fill);

}  // namespace mqa::compare
