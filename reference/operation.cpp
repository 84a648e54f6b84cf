#include "operation.hpp"

#include "reference/paged/exact.hpp"

namespace mqa::operation {

exact::result exact_logits(const exact::problem& rows, const paged::problem* paged, const exact::options& o,
                           const engines& e) {
  if (paged) return e.paged ? e.paged(*paged, o) : paged::compute(*paged, o);
  return e.prefill ? e.prefill(rows, o) : exact::compute(rows, o);
}

}  // namespace mqa::operation
