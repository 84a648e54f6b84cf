#include "reference.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

#include "reference/exact/logits.hpp"
#include "reference/paged/exact.hpp"

namespace mqa::bundle {

// The bundle's reference is the contract's: relu keeps NaN (torch.relu); a variant that declares
// fmax is judged against its own rule by the validator, not by this file. No magnitude: a bundle
// stores none, and it would double what computing the reference holds in memory.
std::vector<float> exact_reference(const cases::case_spec& c, const inputs::tensors& t) {
  exact::options o;
  o.magnitude = false;
  if (t.paged) return paged::compute(inputs::paged_problem_of(c, t), o).logits;
  return exact::compute(inputs::problem_of(c, t), o).logits;
}

void exact_reference_rows(const cases::case_spec& c, const inputs::tensors& t, std::int64_t first, std::int64_t count,
                          std::span<float> out, const operation::engines& engines) {
  exact::options o;
  o.magnitude = false;
  o.rows.resize(static_cast<std::size_t>(count));
  std::iota(o.rows.begin(), o.rows.end(), first);
  const exact::problem rows = inputs::problem_of(c, t);
  std::optional<paged::problem> paged;
  if (t.paged) paged = inputs::paged_problem_of(c, t);
  const exact::result r = operation::exact_logits(rows, paged ? &*paged : nullptr, o, engines);
  std::copy(r.logits.begin(), r.logits.end(), out.begin());
}

}  // namespace mqa::bundle
