// `run --devices`: a suite's cases split over the workers of a host (one per GPU) so that each
// worker's share of the work is about the same. A case goes whole to one worker: its inputs and
// its exact reference, the expensive part on the host, are then made once. Each worker is a
// shard that owns an explicit list of pairs (shard.hpp), so that `merge` checks the split.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "validator/case/case.hpp"
#include "validator/verdict/shard.hpp"

namespace mqa::verdict {

// A case's cost when nothing measured it: the elements of its Q and K products, m * n * heads *
// head_dim, which the reference and every variant's work grow with.
double estimated_cost(const cases::case_spec& c);

// Each case's cost as an earlier run of the suite measured it: its report's "timings" (a case's
// total_seconds), for the cases it timed. A case it did not time gets its estimate scaled by the
// seconds per estimated unit of those it did; estimates alone where it timed none.
std::vector<double> measured_costs(const std::vector<cases::case_spec>& cases, const nlohmann::json& report);

// The cases (by cost, in suite order) over at most `workers` shards, largest first, each to the
// worker with the least cost so far (the lowest-numbered one on a tie): deterministic. Each shard
// lists every pair of its cases (pair = case * variants + variant). Fewer shards than `workers`
// when there are fewer cases; none is empty. `workers` >= 1.
std::vector<shard> balance_cases(const std::vector<double>& case_costs, std::size_t variants, int workers);

// The summed cost of each shard's cases, in the order of `shards`.
std::vector<double> shard_costs(const std::vector<shard>& shards, const std::vector<double>& case_costs,
                                std::size_t variants);

}  // namespace mqa::verdict
