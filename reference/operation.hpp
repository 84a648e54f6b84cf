// The operation, prefill or paged decode, dispatched once: a paged problem is judged as its rows
// (paged::rows_view, no keys) together with the paged problem those rows belong to, and every stage
// that computes exact logits of "the rows" asks here which computation they need.
#pragma once

#include <functional>

#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"

namespace mqa::operation {

// Engines that give exact::compute's (paged::compute's) bits faster, such as the command line's
// GPU reference; an empty one is the CPU's.
struct engines {
  std::function<exact::result(const exact::problem&, const exact::options&)> prefill;
  std::function<exact::result(const paged::problem&, const exact::options&)> paged;
  // Whether `prefill` computes this reference, or with options::dot_model set this modelled centre,
  // on a GPU. There a centre of every row costs about what the kernel judged does (the CPU's model
  // takes seconds per 2^34 multiply-adds, and a centre past that is computed on sampled rows:
  // judge::centre_rows), and a whole reference less than the CPU's magnitudes of logits already
  // known (judge::judged_references). Empty: never.
  std::function<bool(const exact::problem&, const exact::options&)> on_device;
  // The same of `paged`: whether it computes every request's reference (centre) on a GPU.
  std::function<bool(const paged::problem&, const exact::options&)> paged_on_device;
};

// The exact logits of `rows` under `o`: rows is the prefill problem itself, or, with `paged` set,
// that paged problem's rows (paged::rows_view).
exact::result exact_logits(const exact::problem& rows, const paged::problem* paged, const exact::options& o,
                           const engines& e = {});

}  // namespace mqa::operation
