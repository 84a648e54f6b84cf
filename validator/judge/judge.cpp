#include "judge.hpp"

#include <algorithm>
#include <bit>
#include <chrono>

#include "validator/cut/cut.hpp"
#include "validator/diagnose/diagnose.hpp"
#include "validator/judge/references.hpp"
#include "validator/judge/suspicion.hpp"

namespace mqa::judge {

namespace {

// A finding the comparator first saw where it had no centre (a row outside a modelled contract's
// sampled centre: compare/outside_centre.hpp) shows the centre of that element, computed alone.
void expected_where_unknown(const compare::subject& s, compare::judgement& j) {
  for (compare::finding& f : j.findings) {
    if (f.expected_known) continue;
    const float centre = centre_at(s.contract, *s.problem, s.paged, f.first_row, f.first_col);
    f.expected_bits = std::bit_cast<std::uint32_t>(centre);
    f.expected_known = true;
  }
}

}  // namespace

void finish(const compare::subject& s, compare::judgement& j, const options& o, seconds* spent,
            const std::function<void(compare::judgement&)>& diagnose_with) {
  seconds own;
  seconds& t = spent ? *spent : own;
  expected_where_unknown(s, j);
  j.findings.insert(j.findings.end(), o.launch_findings.begin(), o.launch_findings.end());
  if (s.repeat && s.contract.deterministic) {
    const auto start = std::chrono::steady_clock::now();
    // The reference's rows, or every row where the caller judged in blocks and holds no reference.
    const std::vector<std::int64_t> rows = s.reference ? s.reference->rows : cut::consecutive(0, s.problem->m);
    if (auto f = compare::compare_runs(s.output, *s.repeat, *s.problem, rows, s.contract.mask, s.threads))
      j.findings.push_back(*f);
    t.determinism += seconds_since(start);
  }
  std::stable_sort(j.findings.begin(), j.findings.end(), [](const auto& a, const auto& b) { return a.kind < b.kind; });
  const auto witnessed = std::chrono::steady_clock::now();
  if (const auto counts = answer_copy_counts(s); counts && suspected(*counts)) j.suspected = *counts;
  t.suspicion += seconds_since(witnessed);
  if (o.diagnose && !j.pass() && diagnose::diagnosable(s.contract, *s.problem)) {
    const auto start = std::chrono::steady_clock::now();
    if (diagnose_with)
      diagnose_with(j);
    else
      diagnose::explain(s, j);
    t.diagnosis += seconds_since(start);
  }
}

compare::judgement judge(const compare::subject& s, const options& o, seconds* spent) {
  const auto start = std::chrono::steady_clock::now();
  compare::judgement j = compare::judge(s);
  if (spent) spent->compare += seconds_since(start);
  finish(s, j, o, spent);
  return j;
}

}  // namespace mqa::judge
