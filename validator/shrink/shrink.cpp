#include "shrink.hpp"

#include <algorithm>

namespace mqa::shrink {
namespace {

using indices = std::vector<std::int64_t>;

class minimizer {
 public:
  minimizer(const still_fails& test, const plan& p, outcome& out) : test_(test), plan_(p), out_(out) {}

  // True when `test` holds for the current selection with dimension `d` replaced by `candidate`.
  bool holds(indices cut::selection::*d, const indices& candidate) {
    if (out_.candidates >= plan_.max_candidates) {
      out_.budget_ran_out = true;
      return false;
    }
    ++out_.candidates;
    cut::selection trial = out_.kept;
    trial.*d = candidate;
    return test_(trial);
  }

  // ddmin's complement step over one dimension, in groups of `group` consecutive kept indices.
  bool reduce(indices cut::selection::*d, std::int64_t group) {
    bool changed = false;
    std::size_t chunks = 2;
    for (;;) {
      const indices& items = out_.kept.*d;
      const std::size_t units = items.size() / static_cast<std::size_t>(group);
      if (units < 2 || out_.budget_ran_out) return changed;
      chunks = std::min(chunks, units);
      const std::size_t per_chunk = (units + chunks - 1) / chunks;
      bool removed = false;
      for (std::size_t start = 0; start < units && !removed; start += per_chunk) {
        const auto from = static_cast<std::ptrdiff_t>(start * group);
        const auto to = static_cast<std::ptrdiff_t>(std::min(units, start + per_chunk) * group);
        indices candidate(items.begin(), items.begin() + from);
        candidate.insert(candidate.end(), items.begin() + to, items.end());
        if (holds(d, candidate)) {
          out_.kept.*d = std::move(candidate);
          chunks = std::max<std::size_t>(chunks - 1, 2);
          removed = changed = true;
        }
      }
      if (removed) continue;
      if (chunks >= units) return changed;
      chunks = std::min(units, chunks * 2);
    }
  }

 private:
  const still_fails& test_;
  const plan& plan_;
  outcome& out_;
};

}  // namespace

outcome minimize(const cut::selection& start, const still_fails& test, const plan& p) {
  outcome out{start, 0, false};
  minimizer m(test, p, out);
  if (p.focus_row >= 0 && out.kept.rows.size() > 1 &&
      std::binary_search(out.kept.rows.begin(), out.kept.rows.end(), p.focus_row) &&
      m.holds(&cut::selection::rows, {p.focus_row}))
    out.kept.rows = {p.focus_row};
  for (int round = 0; round < 8; ++round) {
    bool changed = m.reduce(&cut::selection::rows, 1);
    changed |= m.reduce(&cut::selection::keys, 1);
    if (p.heads) changed |= m.reduce(&cut::selection::heads, 1);
    if (p.dims) changed |= m.reduce(&cut::selection::dims, std::max<std::int64_t>(p.dim_group, 1));
    if (!changed || out.budget_ran_out) break;
  }
  return out;
}

}  // namespace mqa::shrink
