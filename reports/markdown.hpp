// summary.md: a table per run, fit for $GITHUB_STEP_SUMMARY or a pull-request comment, made from
// a report.json document (report.hpp): the broken expectations and skipped pairs first, then case,
// variant, outcome, max and p99 ULP, max error/bound, top-k recall and findings, then the mutants
// and the cases that caught them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mqa::reports {

std::string markdown(const nlohmann::json& report);

}  // namespace mqa::reports
