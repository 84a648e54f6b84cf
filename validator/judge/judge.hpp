// The judge: one kernel output (and its repeat) against the exact reference under the declared
// contract. Every way mqacheck judges goes through here: the built-in variants (validator/runner),
// kernels behind an adapter (validator/external), `check` and `shrink`.
//
//   judge = the comparator (findings and metrics)
//         + the findings the launch itself reported (a guard band overwritten)
//         + the determinism check (launch 2 bit for bit, where the contract promises it)
//         + the diagnosis of a failing output (validator/diagnose), when asked for
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "validator/compare/comparator.hpp"
#include "validator/compare/subject.hpp"
#include "validator/elapsed.hpp"

namespace mqa::judge {

struct options {
  bool diagnose = false;  // findings get the cause validator/diagnose reproduces
  // Findings the launch reported that no comparison of values can see (compare::finding_class::
  // out_of_bounds from a guard band).
  std::vector<compare::finding> launch_findings;
};

// Where a judgement's time went.
struct seconds {
  double compare = 0;         // the comparator
  // Of which, where the device judged: its kernel, its figures' copy to the host, the judgement
  // made of them there.
  double compare_kernel = 0, compare_download = 0, compare_summary = 0;
  double determinism = 0;     // launch 2 against launch 1, bit for bit
  double suspicion = 0;       // the witness of the declared arithmetic (suspicion.hpp)
  double diagnosis = 0;
};

// Wall seconds since `start`: what the judge's step timings add up.
using mqa::seconds_since;

// s.reference (and s.centre) must hold every row judged; s.repeat, where set, is compared with
// s.output on the reference's rows when s.contract.deterministic. Findings come ordered by class.
compare::judgement judge(const compare::subject& s, const options& o = {}, seconds* spent = nullptr);

// What judge() does after the comparator, on a judgement the caller made (the runner compares
// launch 1 while launch 2 runs; the block-wise judge compares block by block): the expected value
// of a finding first seen where the comparator had no centre (finding::expected_known; centre_at),
// the launch's findings, the determinism check (over every row where s.reference is null), the
// order, and with o.diagnose the diagnosis of a failing output: diagnose::explain(s, j), or
// `diagnose_with(j)` where given (the block-wise judge computes the few rows the diagnosis samples
// only then).
void finish(const compare::subject& s, compare::judgement& j, const options& o, seconds* spent,
            const std::function<void(compare::judgement&)>& diagnose_with = {});

}  // namespace mqa::judge
