// A paged case generated, with the views the kernels and the judge take: the operation's problem,
// each row's window, and the rows judged (paged::rows_view: m = batch x next_n, n = max_context).
#pragma once

#include <utility>

#include "reference/paged/problem.hpp"
#include "validator/case/case.hpp"
#include "validator/inputs/inputs.hpp"

namespace mqa::test {

struct paged_case {
  cases::case_spec spec;
  inputs::tensors t;
  paged::problem problem;  // borrows t
  paged::row_windows windows;
  exact::problem rows;     // borrows t and windows
};

inline paged_case generate_paged(cases::case_spec spec) {
  paged_case c;
  c.spec = std::move(spec);
  c.t = inputs::generate(c.spec);
  c.problem = inputs::paged_problem_of(c.spec, c.t);
  c.windows = paged::windows_of(c.problem);
  c.rows = paged::rows_view(c.problem, c.windows);
  return c;
}

}  // namespace mqa::test
