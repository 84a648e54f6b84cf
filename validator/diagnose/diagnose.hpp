// Diagnosis: the most likely cause of each finding of a judged output, by reproduction.
// mqacheck's own arithmetic model (kernels/cpu) is re-run on the same inputs with each setting of
// a table of planted bugs (hypotheses.hpp), and a finding gets the sentence of the first one that
// reproduces it, in one of two ways:
//
//   bit for bit: set the kernel's output to the exact value wherever it equals the buggy model's
//     bit for bit; if the finding then vanishes (and no other appears), every element it covers is
//     what the planted bug writes; and the buggy model, judged as a kernel, must show the class on
//     exactly as many elements (a model that writes NaN everywhere matches any NaN, and is refused
//     by the elements where the kernel has none);
//   within the bound: judge the output against the exact value of the operation with the bug
//     planted (its inputs or windows edited, operation.hpp), under the declared contract, or
//     under the edited contract the sentence then names ("would pass under --accumulate bf16");
//     the finding must vanish and no other appear. A looser contract must also be how the kernel
//     computes: the planted model accounts for at least half of the kernel's distance to the exact
//     logits, so that a loose bound does not swallow an unrelated bug and get named for it.
//
// Bit-for-bit reproductions are sought over the whole table first, then within-bound ones, each in
// the table's order (cheap and specific first); a changed top-k goes to the hypothesis that explains
// another finding with it where there is one. Where the output cannot tell two candidates of one
// hypothesis apart (q's bytes misread or k's: either halves every product; the previous row's window
// or an end one short, on a causal layout) the sentence names both. Only what was reproduced is
// said: a finding nothing reproduces keeps no diagnosis, nothing is said from a single element (any
// bug that writes such a value there reproduces it), and an output without findings is never
// looked at.
//
// The model runs on the CPU in plain loops, so the work is bounded: each model run costs at most
// `options::model_work` float32 multiply-adds or their time's worth (a matrix-instruction dot costs
// about 16 of them, a truncating one 4), the rows (then the keys) being sampled to fit, always with
// each finding's first element and every sampled row's window edges (sample.hpp). What a sample
// cannot show (a finding whose evidence lies elsewhere) is not diagnosed. Measured on the quick
// suite (2 cores): about 20 ms per diagnosed output with a float32 contract, 80 ms with sm90-wgmma.
//
// A paged decode problem (`subject::paged` set, `problem` its rows view) is sampled the
// same way, by rows and keys of its rows view, under the same budget: each sampled row's request is
// read whole from the cache as the kernel would read it (kernels/cpu/paged.hpp, read_request; for a
// paged cause with its planted reading), so a bug that ties a row to its request's other rows or a
// key to its block writes on the sample what it writes in the full run, and the model runs on the
// sampled rows and keys only. Reading costs each sampled request max_context x head_dim bytes per
// model run on top of the budget: about 2.5 s for 4 rows of 32 K keys at 64 heads x 128 (prefill of
// that size: 1.1 s); the quick suite's paged cases, 58 findings, about 2 s single-threaded.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/contract.hpp"
#include "kernels/variant.hpp"
#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"
#include "validator/compare/comparator.hpp"

namespace mqa::diagnose {

struct options {
  // Float32 multiply-adds' worth of work per model run (about 10 ms); a few dozen runs at most per
  // output.
  double model_work = 0x1p22;
};

// Whether findings on `p` under `c` can be diagnosed at all. Not under bf16 logits or
// relative columns (the models write float32 outputs in absolute columns, so none can reproduce
// such an output), and not on e2m1fn operands (the sampled problems and the judged sample carry no
// block scales: validator/cut keeps whole fp8 tokens). explain and rows_needed check it themselves.
bool diagnosable(const kernels::contract& c, const exact::problem& p);

// Attaches a diagnosis to each finding of `j` that a hypothesis reproduces (compare::likely_cause).
void explain(const compare::subject& e, compare::judgement& j, const options& o = {});

// The rows of e.reference and e.centre that explain(e, j, o) reads (its sample's), ascending;
// e.judged_rows must be set, reference and centre may still be null. Empty when j has no findings
// or nothing is diagnosable.
std::vector<std::int64_t> rows_needed(const compare::subject& e, const compare::judgement& j, const options& o = {});

}  // namespace mqa::diagnose
