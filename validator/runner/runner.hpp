// Runs one variant on one problem the way the validator trusts: the output is poisoned first (so
// `unwritten` is visible), the row stride is padded (so an ignored stride shows), and a variant
// that declares determinism is launched twice and compared bit for bit.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/variant.hpp"
#include "reference/exact/logits.hpp"
#include "validator/compare/comparator.hpp"

namespace mqa::runner {

struct outcome {
  compare::judgement judgement;
  kernels::launch_report launch;  // of the first launch
  std::int64_t stride = 0;
};

// The padded row stride used for a problem with n keys: never equal to n.
std::int64_t padded_stride(std::int64_t n);

// `reference` must have been computed with the variant's declared relu rule.
outcome run(const kernels::variant& v, const exact::problem& p, const exact::result& reference,
            std::optional<std::int64_t> topk, unsigned threads = 0);

}  // namespace mqa::runner
