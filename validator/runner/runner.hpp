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

// Where one run's time went (issue 11): the runner's own costs next to the kernel's.
struct stage_seconds {
  double buffers = 0;      // poisoning the output buffers (allocating them the first time)
  double launches = 0;     // the variant's launches, as the host sees them (both, when deterministic)
  double judge = 0;        // the comparator
  double determinism = 0;  // comparing the two launches bit for bit
};

struct outcome {
  compare::judgement judgement;
  kernels::launch_report launch;  // of the first launch
  std::int64_t stride = 0;
  stage_seconds seconds;
};

// Output buffers kept from one run to the next: the variants of a case reuse them (at production
// shapes each is gigabytes, whose first touch costs as much as poisoning it).
struct buffers {
  std::vector<float> first, second;
};

// The padded row stride used for a problem with n keys: never equal to n.
std::int64_t padded_stride(std::int64_t n);

// The centre a contract is judged around when its dot accumulator is modelled bit for bit
// (bounds::is_modelled): the exact value with the model's dots, on the reference's rows; nullopt
// for every other contract, which is judged around the reference itself. Throws input_error when
// the instruction does not take the problem's formats or head_dim.
std::optional<exact::result> centre_for(const kernels::contract& c, const exact::problem& p,
                                        const exact::result& reference, unsigned threads = 0);

// `reference` must have been computed with the variant's declared relu rule; `centre`, when the
// contract needs one, by centre_for on the same rows.
outcome run(const kernels::variant& v, const exact::problem& p, const exact::result& reference,
            const exact::result* centre, std::optional<std::int64_t> topk, unsigned threads = 0,
            buffers* reuse = nullptr);

}  // namespace mqa::runner
