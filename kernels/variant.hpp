// A variant under test: a kernel (CPU model, planted-bug mutant, or GPU kernel) with its contract.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/contract.hpp"
#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"

namespace mqa::kernels {

// The output a variant writes: float32 [m, n] with row stride >= n, as DeepGEMM and AITER pad it.
struct output_view {
  float* data = nullptr;
  std::int64_t m = 0, n = 0, stride = 0;
  float* row(std::int64_t i) const { return data + i * stride; }
};

// A top-k index kernel's output: int64 [m, k], row i's selected keys, -1 where the row's window holds
// fewer than k keys (vLLM's top_k_per_row_* and torch.topk behind its fallback pad so).
struct indices_view {
  std::int64_t* data = nullptr;
  std::int64_t m = 0, k = 0;
  std::int64_t* row(std::int64_t i) const { return data + i * k; }
};

// What a top-k kernel promises about the indices it writes. Ranking: NaN highest, then +inf, as
// torch.topk ranks (vLLM's radix kernels order float bits with negatives flipped: the same for a
// NaN without the sign bit, while one with it ranks below -inf); ties any way.
struct topk_convention {
  columns_layout columns = columns_layout::absolute;  // relative: key minus the row's ks
  bool sorted = false;  // descending by value, as torch.topk(sorted=True) returns them
};

// The top-k stage of an indexer: selects each row's k keys from the logits the variant wrote (their
// absolute image, [m, n]), into an indices_view of width k.
struct topk_stage {
  topk_convention convention;
  std::function<void(const exact::problem&, const output_view& logits, const indices_view& out)> select;
};

// Where a variant runs; GPU variants report their own kernel time.
struct launch_report {
  double kernel_seconds = 0;  // device-event time for GPU variants, wall time for CPU ones
  // GPU runner: canary words overwritten in the guard bands before and after the output buffer
  // (an out-of-bounds write); always 0 for CPU variants, which write through output_view only.
  std::int64_t guard_band_violations = 0;
  std::int64_t first_violation_offset = 0;  // in floats from the output's start (negative: before it)
};

struct variant {
  std::string name;
  std::string description;  // what it models, in a kernel engineer's words
  contract declared;
  // Mutants: the finding classes that catching its planted bug must produce (any one of them);
  // empty for a correct variant.
  std::vector<std::string> must_produce;
  std::string bug_class;  // "BUGCLASSES 11" and the like, for mutants
  // Writes every element it means to write; `run_index` counts launches (0, 1, ...) so that the
  // determinism check can run it twice. Unset: the variant implements the paged operation only.
  std::function<launch_report(const exact::problem&, const output_view&, int run_index)> run;
  // The paged decode operation (reference/paged/problem.hpp): the output is [batch x
  // next_n, max_context]. Unset: the variant implements the prefill operation only.
  std::function<launch_report(const paged::problem&, const output_view&, int run_index)> run_paged;
  // Why this kernel cannot run a problem (a shape or device it does not support), or nullopt; the
  // verdict skips such pairs with the reason. Unset: it runs everything its formats allow.
  std::function<std::optional<std::string>(const exact::problem&)> refuses;
  // An indexer: logits, then their top-k, judged together (the indices against the exact values
  // under the same contract). Unset: a logits kernel only.
  std::optional<topk_stage> topk;
};

}  // namespace mqa::kernels
