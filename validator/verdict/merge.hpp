// `mqacheck merge SHARD.json ... --out DIR`: the reports of the N shards of one run
// (`run --shard I/N`, validator/verdict/shard.hpp) put back together into the report the unsharded
// run writes, timing aside: results and skipped pairs in pair order, a mutant caught in any shard
// caught, expectations judged over every pair. Timing fields are the shards' sums (machine time,
// not wall time): "seconds", "timings" per case; "kernel_seconds" stay each pair's own.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "validator/verdict/report_document.hpp"

namespace mqa::verdict {

// Throws input_error (exit status 2, nothing written) for: a report that is no shard's; shards of
// different runs (suite, build, variants, cases or N differ); a shard given twice or missing; a
// shard whose results and skipped pairs are not exactly the pairs it owns (pair mod N, or the
// "pairs" its report lists: a `run --devices` worker's); a pair no shard owns.
nlohmann::json merge_shards(const std::vector<named_report>& shards);

// A whole run's report (a merge's, not one shard's) whose every pair was skipped: not one case
// judged (suite_report::nothing_judged's rule, on report.json).
bool every_pair_skipped(const nlohmann::json& report);

}  // namespace mqa::verdict
