// The suspicion note: an output that is the exact reference where the declared arithmetic cannot be.
//
// A witness of the declared arithmetic is computed on a sample of the judged rows: for a modelled
// contract (bounds::is_modelled) its centre (every dot the instruction model's, the rest exact and
// rounded once), on whole rows of it, about 2^21 elements and at least 16 rows; otherwise a correct CPU model of the contract (kernels/cpu arithmetic_models: a
// float32 accumulator summing in order, say). Where the witness's bits differ from the correctly
// rounded reference's, the declared arithmetic rounded away from it: an honest kernel of that
// arithmetic, whatever its order, hits the reference's exact bits there only by coincidence, a
// minority of such elements. A kernel that hands back the answer itself (read from somewhere, or
// computed by another, exact path while declaring a rounding one) hits every one of them. So: at
// least kMinimumDiffering sampled elements where the witness's bits differ from the reference's,
// and the output has the reference's bits on at least kShareMatched of them.
//
// No note for an `exact` contract (it must match), nor under bfloat16 logits (the stored rounding
// hides the arithmetic's errors: an honest kernel gives the exact bfloat16 on nearly every element,
// and where a witness's does not, another order often does), nor for a paged problem under a contract
// without a model (its CPU model is not sampled here); there the protection is that the kernel
// never sees the reference (docs/protocol.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "validator/compare/comparator.hpp"
#include "validator/compare/subject.hpp"

namespace mqa::judge {

inline constexpr std::int64_t kMinimumDiffering = 32;
inline constexpr double kShareMatched = 0.9;

// The counts over the sampled elements, in windows, finite values (bfloat16 bits under a bf16
// contract); nullopt where there is no witness (above). Suspected when they pass both thresholds.
std::optional<compare::suspicion> answer_copy_counts(const compare::subject& s);
bool suspected(const compare::suspicion& c);

// The same counts from the witnessed rows alone: `witnessed` holds the output's rows that
// witnessed_rows(s) names, in its order, s.problem->n values each (s.output is not read). A judge
// that holds the output elsewhere (a GPU's memory) copies just these. Throws std::invalid_argument
// where the size is not that.
std::optional<compare::suspicion> answer_copy_counts(const compare::subject& s, const std::vector<float>& witnessed);

// The rows of the output answer_copy_counts(s) reads (none where it has no witness): a judge that
// holds the output elsewhere (a GPU's memory) brings these rows to the host for it.
std::vector<std::int64_t> witnessed_rows(const compare::subject& s);
// The same before any reference is at hand: `judged` the rows the references will hold (a modelled
// contract's centre and reference hold the same rows). A judge that computes its references block
// by block keeps these rows' for answer_copy_counts.
std::vector<std::int64_t> witnessed_rows(const compare::subject& s, const std::vector<std::int64_t>& judged);

// One sentence for reports: what was seen and what it may mean.
std::string suspicion_note(const compare::suspicion& c);

}  // namespace mqa::judge
