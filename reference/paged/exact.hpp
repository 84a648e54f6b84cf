// The exact reference of the paged operation (problem.hpp): each request's keys are gathered
// through its block table into a dense problem whose rows are the request's next_n queries, and
// the prefill reference (reference/exact) computes it. No second exact engine: the paged
// operation is the prefill one on gathered keys, so its values, magnitudes, special-value rules
// and the dot models of modelled contracts are exact::compute's.
#pragma once

#include <functional>

#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"

namespace mqa::paged {

// A dense reference engine: exact::compute, or one that gives the same bits (the GPU's).
using dense_engine = std::function<exact::result(const exact::problem&, const exact::options&)>;

// result.rows: o.rows (ascending, each in [0, rows)) or every row; logits [rows.size(),
// max_context], correctly rounded in each window and -inf past it; magnitude 0 past it.
// Options are exact::compute's (relu, dot_model, promote_every, dots, magnitude) and apply to every
// request; known_logits is refused (std::invalid_argument): they are rows of another problem.
// Without `engine`, requests are computed in parallel on o.threads threads (0: all), each by
// exact::compute on one thread; with it, one request after another, each call given o.threads.
// Throws std::invalid_argument for a problem check_problem refuses or rows out of order or range.
exact::result compute(const problem& p, const exact::options& o = {}, const dense_engine& engine = {});

}  // namespace mqa::paged
