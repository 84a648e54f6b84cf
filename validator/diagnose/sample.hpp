// The part of a problem the diagnosis re-runs models on: rows and keys chosen to fit a work budget,
// and the problem, reference, centre and kernel outputs cut to them (validator/cut). Everything is
// judged on the cut, which the comparator treats as a problem of its own (judged.hpp; a paged
// problem's rows are chosen alike, and each sampled request is read whole: paged_sample.hpp).
#pragma once

#include <optional>
#include <vector>

#include "validator/compare/comparator.hpp"
#include "validator/cut/cut.hpp"
#include "validator/diagnose/diagnose.hpp"
#include "validator/diagnose/judged.hpp"

namespace mqa::diagnose {

struct sample {
  cut::selection at;          // rows and keys of the full problem; every head and dim
  judged_problem problem;     // the operation on them
  exact::result reference;    // cut: rows 0 .. at.rows.size() - 1
  std::optional<exact::result> centre;
  std::vector<float> kernel;  // [rows, keys]
  std::optional<std::vector<float>> repeat;
  bool whole = false;         // every judged row and every key

  const exact::result& judged_centre() const { return centre ? *centre : reference; }
  kernels::output_view view(std::vector<float>& values) const;
};

// Every judged row and key when that fits `model_work`; else the rows of each finding's first
// element, then exact::sample_rows's (first, last, window edges, random), as many as fit with
// every key, at least 8; and, when even those do not fit, the keys of each finding's first element,
// each sampled row's window edges (ks - 1, ks, ke - 1, ke) and the last key, then evenly spaced keys.
sample take_sample(const compare::subject& e, const compare::judgement& j, double model_work);

// The rows and keys take_sample takes; it reads no reference (subject::judged_rows, when set, are
// the rows judged).
cut::selection select_sample(const compare::subject& e, const compare::judgement& j, double model_work);

// The comparator on a sample: `output` [rows, keys] under `contract`, against `reference` (and
// `centre`) cut the same way; with `repeat`, launch 2 compared bit for bit as the runner does.
compare::judgement judge_sample(const compare::subject& e, const judged_problem& problem, const exact::result& reference,
                                const exact::result* centre, std::vector<float>& output,
                                std::vector<float>* repeat, const kernels::contract& contract);

}  // namespace mqa::diagnose
