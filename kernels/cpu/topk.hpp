// A CPU top-k kernel, the second stage of an indexer: each row's k largest logits of its window
// [ks, ke) as absolute keys, descending, -1 padding where the window is shorter than k (as vLLM's
// top_k_per_row_prefill pads), and its planted bugs as knobs of the one loop.
#pragma once

#include <cstdint>

#include "kernels/variant.hpp"
#include "reference/exact/logits.hpp"

namespace mqa::kernels::cpu {

struct topk_config {
  bool duplicate_first = false;     // the last selected slot repeats the first key
  bool one_past_end = false;        // the window read as [ks, ke]: key ke is a candidate
  bool relative_as_absolute = false;  // writes key - ks while declaring absolute columns
  bool no_padding = false;          // short windows: the slots past the window keep key ks, not -1
  bool bf16_ranked = false;         // ranks the logits rounded to bfloat16 (ties to the lower key)
  bool nan_lowest = false;          // a NaN logit ranked below -inf instead of above +inf
  bool ascending = false;           // the selected keys written in ascending order of value
};

// Selects into `out` (width k) from `logits` (absolute columns, [m, n]) of p's rows.
void select_topk(const topk_config& config, const exact::problem& p, const output_view& logits,
                 const indices_view& out);

}  // namespace mqa::kernels::cpu
