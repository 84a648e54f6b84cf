// `mqacheck diff BASELINE NEW`: what changed between two reports of one suite. Cases are
// matched by name and compared only where their inputs agree (inputs fingerprint, shape,
// clean_logits, top-k k): a changed case is reported, never silently compared. Results are
// matched by (case, variant); two reports of `run --kernel` match their one kernel by case, so
// that a new version of a library (a new adapter label) is compared with the old one.
//
// A diff REGRESSES (reports/README.md, "What regresses") when the new report
//   - fails a correct variant's pair that passed in the baseline (model-fails), or shows a finding
//     class on a correct variant's pair that the baseline did not (new-finding-class);
//   - fails a correct variant's pair the baseline did not have (new-pair-fails);
//   - misses a pair the baseline judged, or judges a case whose inputs changed (pair-missing,
//     case-missing, case-changed): the baseline no longer vouches for it;
//   - leaves a mutant caught in the baseline, or a new one, caught by no case (mutant-blind);
//   - with a slowdown limit, runs a pair's kernel more than that factor slower (slower);
//   - declares, for a variant or kernel in both reports, a contract weaker than the baseline's
//     (contract-weakened, validator/verdict/contract_change.hpp): unless accepted
//     (diff_options::accept_weaker_contract), when it is listed in report_diff::accepted instead.
//   - with a drift limit, shows a pair's error in ULPs of the magnitude A (metrics.magnitude_ulp,
//     p99 or max) grown by more than that factor (ulp-drift): the arithmetic changed, a summation
//     order say, though both may be within the bound.
// Metric drift (max error/bound, ULP percentiles, top-k recall) is reported and never regresses
// by itself: within the bound every value is correct. Kernel time is reported; it regresses only
// with a limit (diff_options::max_slowdown). The diff is written out (JSON, Markdown, a table for
// a terminal) by reports/diff_text.hpp.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "validator/verdict/report_document.hpp"

namespace mqa::verdict {

struct diff_options {
  std::optional<double> max_slowdown;  // new kernel time / baseline kernel time beyond this regresses
  bool accept_weaker_contract = false;  // a weaker contract is accepted (listed), not a regression
  // new / baseline error in ULPs of the magnitude (p99 or max) beyond this regresses (ulp-drift);
  // initialised here so that callers that set only the slowdown need not name it
  std::optional<double> max_drift = std::nullopt;
};

struct regression {
  std::string kind;  // model-fails, new-finding-class, new-pair-fails, pair-missing, case-missing,
                     // case-changed, mutant-blind, slower, contract-weakened, ulp-drift
  std::string case_name, variant;  // empty where it is about a whole case or a mutant
  std::string text;                // one sentence
};

// A metric of a pair in both reports (JSON values: a number, "inf" or null).
struct metric_values {
  // max_error_over_bound, magnitude_ulp_p99 (ULPs of A), ulp_p50, ulp_p99, ulp_p999, ulp_max (raw),
  // share_exact, topk_recall, kernel_seconds
  std::string name;
  nlohmann::json baseline, now;
  bool differs() const { return baseline != now; }
};

struct pair_diff {
  std::string case_name, variant;
  std::string baseline_variant;  // differs from `variant` where kernels were matched by case
  std::string status;            // compared, added, vanished, case-changed
  std::string baseline_outcome, new_outcome;  // empty where the report has no such pair
  std::string baseline_findings, new_findings;  // findings_summary of each side
  std::vector<std::string> classes_added, classes_removed;
  std::vector<metric_values> metrics;
  bool changed() const;  // anything but kernel time differs
};

struct case_diff {
  std::string name;
  std::string status;  // same, changed, added, vanished
  std::vector<std::string> changes;  // "inputs fingerprint 0123... -> 4567...", "topk 16 -> 32"
};

struct mutant_diff {
  std::string variant;
  std::vector<std::string> baseline_caught_by, new_caught_by;
  bool in_baseline = false, in_new = false;
};

struct report_diff {
  std::string suite;
  nlohmann::json baseline_info, new_info;  // path, mqacheck build, expectations, kernel
  std::vector<case_diff> cases;
  std::vector<pair_diff> pairs;
  std::vector<mutant_diff> mutants;
  std::vector<regression> regressions;
  std::vector<regression> accepted;  // contract-weakened, accepted by diff_options::accept_weaker_contract
  std::vector<std::string> improvements;
  std::optional<double> max_slowdown;
  bool regressed() const { return !regressions.empty(); }
};

// Throws input_error (exit status 2) for reports that cannot be compared: different suites, a
// shard's report against a whole run or another shard (merge the shards first), a contract line
// this mqacheck cannot read back.
report_diff diff_reports(const named_report& baseline, const named_report& now, const diff_options& o = {});

}  // namespace mqa::verdict
