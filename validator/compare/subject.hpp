// What is judged: one kernel output, the references it is judged against and the contract it is
// judged under. The comparator, the determinism check and the diagnosis read this one record;
// validator/judge fills it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/contract.hpp"
#include "kernels/variant.hpp"
#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"

namespace mqa::compare {

struct subject {
  // The rows judged: q, weights and windows, and for a prefill problem the keys. A paged problem
  // is judged as its rows (paged::rows_view: m = batch x next_n, n = max_context, no keys) with
  // `paged` set: row b * next_n + t then sees request b's keys through its block table.
  const exact::problem* problem = nullptr;
  const paged::problem* paged = nullptr;
  // Computed with the contract's relu rule; its rows are the rows judged. Under a bf16 contract it
  // (and the centre) must have been computed with exact::options::bf16_logits: ULPs count bfloat16
  // units from its logits_bf16.
  const exact::result* reference = nullptr;
  // What the bound is centred on: the reference itself unless the contract's dot accumulator is
  // modelled bit for bit (bounds::is_modelled), when it is the exact value of the operation with
  // every dot replaced by the model's (exact::options::dot_model). Its rows, a subset of the
  // reference's, are then the rows judged (judge::centre_rows samples them on large problems).
  const exact::result* centre = nullptr;
  kernels::output_view output;                 // launch 1: [m, stride] (bfloat16 values widened)
  std::optional<kernels::output_view> repeat;  // launch 2, where there is one (`nondeterministic`)
  kernels::contract contract;                  // as judged (masking included)
  std::optional<std::int64_t> topk;            // k; default min(2048, window length)
  bool poisoned = true;  // the output was filled with poison_bits(contract.logits) first
  unsigned threads = 0;
  // The rows the output was judged on where `reference` and `centre` hold only some of them: the
  // block-wise judge keeps no whole reference, so the diagnosis computes the rows it needs
  // (diagnose::rows_needed) with this set. Null: the centre's (else the reference's) rows.
  const std::vector<std::int64_t>* judged_rows = nullptr;
  // A top-k index kernel's output, judged beside the logits (topk_indices.hpp): its width is the k
  // of both the indices and the decidedness figures. Unset: the logits alone.
  std::optional<kernels::indices_view> indices;
  kernels::topk_convention topk_convention;
};

// The subject of `output`, an output of `p` (for a paged problem its rows) under `c`; the
// references, the repeat and the judged rows are the caller's to set. It is judged as poisoned:
// mqacheck's runners fill every output with poison first, and a harness that pre-fills its output
// with mqacheck's poison (float32 bits 0x7FC0DEAD) gets `unwritten` for what its kernel never
// stored (no arithmetic produces that payload).
inline subject subject_of(const exact::problem& p, const paged::problem* paged, const kernels::contract& c,
                          std::optional<std::int64_t> topk, kernels::output_view output, unsigned threads) {
  return {&p, paged, nullptr, nullptr, output, std::nullopt, c, topk, /*poisoned=*/true, threads, nullptr, std::nullopt, {}};
}

}  // namespace mqa::compare
