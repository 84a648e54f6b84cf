// Runs one variant on one problem the way the validator trusts: the output is poisoned first (so
// `unwritten` is visible), the row stride is padded (so an ignored stride shows), and a variant
// that declares determinism is launched twice and compared bit for bit.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/variant.hpp"
#include "reference/exact/logits.hpp"
#include "validator/compare/comparator.hpp"

namespace mqa::runner {

struct outcome {
  compare::judgement judgement;
  kernels::launch_report launch;  // of the first launch
  std::int64_t stride = 0;
};

// The padded row stride used for a problem with n keys: never equal to n.
std::int64_t padded_stride(std::int64_t n);

// The options a contract's reference is computed with: its relu rule, and with bf16 logits the
// correctly rounded bfloat16 values too (the comparator needs them).
exact::options reference_options(const kernels::contract& c, unsigned threads = 0);

// The centre a contract is judged around when its dot accumulator is modelled bit for bit
// (bounds::is_modelled): the exact value with the model's dots, on the reference's rows (on a
// deterministic sample of them past about 2^34 multiply-adds: those rows are judged); nullopt
// for every other contract, which is judged around the reference itself. Throws input_error when
// the instruction does not take the problem's formats or head_dim.
std::optional<exact::result> centre_for(const kernels::contract& c, const exact::problem& p,
                                        const exact::result& reference, unsigned threads = 0);

// `reference` must have been computed with the variant's declared relu rule; `centre`, when the
// contract needs one, by centre_for on the same rows.
outcome run(const kernels::variant& v, const exact::problem& p, const exact::result& reference,
            const exact::result* centre, std::optional<std::int64_t> topk, unsigned threads = 0);

}  // namespace mqa::runner
