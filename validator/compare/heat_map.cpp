#include "heat_map.hpp"

#include <algorithm>
#include <stdexcept>

namespace mqa::compare {

heat_map::heat_map(std::int64_t m_, std::int64_t n_)
    : m(m_), n(n_), rows(std::min(m_, kMaxCells)), cols(std::min(n_, kMaxCells)) {
  if (m <= 0 || n <= 0) rows = cols = 0;
  const auto cells = static_cast<std::size_t>(rows * cols);
  error_over_bound.assign(cells, kNone);
  mask_mismatches.assign(cells, 0);
  unwritten.assign(cells, 0);
  nonfinite.assign(cells, 0);
}

void heat_map::merge(const heat_map& o) {
  if (o.empty()) return;
  if (empty()) {
    *this = o;
    return;
  }
  if (o.m != m || o.n != n) throw std::logic_error("heat_map::merge: maps of different outputs");
  for (std::size_t c = 0; c < error_over_bound.size(); ++c) {
    error_over_bound[c] = std::max(error_over_bound[c], o.error_over_bound[c]);
    mask_mismatches[c] += o.mask_mismatches[c];
    unwritten[c] += o.unwritten[c];
    nonfinite[c] += o.nonfinite[c];
  }
}

}  // namespace mqa::compare
