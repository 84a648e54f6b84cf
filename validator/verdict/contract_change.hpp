// Whether a contract is weaker than a baseline's: whether a kernel judged under `now` could pass
// where, under `baseline`, it would fail. Weaker means the error bound derived from the declared
// arithmetic (reference/bounds/error_bound.hpp) is larger on some element of some judged shape, or
// the contract excuses something the baseline's judged: a centre other than the exact value (a
// modelled dot accumulator, another promotion interval), k_scale applied before relu, relu by fmax,
// a dont-care mask, relative columns, launches allowed to differ. A bound is linear in the
// per-element magnitudes it multiplies (all non-negative), so it is larger on some element exactly
// when one of its coefficients is. `mqacheck diff` and `certify` regress on it (contract-weakened).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "kernels/contract_text.hpp"

namespace mqa::verdict {

struct judged_shape {
  std::int64_t head_dim = 0, heads = 0;
};

// Why `now` is weaker than `baseline` on these shapes (one sentence naming the change), or nullopt
// when every element's bound is at most the baseline's and nothing more is excused.
std::optional<std::string> contract_weakened(const kernels::contract& baseline, const kernels::contract& now,
                                             std::span<const judged_shape> shapes);

// The same for two reports' contract lines: masking left to the cases (a case with clean_logits =
// false judged dont-care) is weaker than masking declared clean.
std::optional<std::string> contract_weakened(const kernels::contract_line& baseline, const kernels::contract_line& now,
                                             std::span<const judged_shape> shapes);

}  // namespace mqa::verdict
