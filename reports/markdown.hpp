// summary.md: a run at a glance, fit for $GITHUB_STEP_SUMMARY or a pull-request comment, made
// from a report.json document (report.hpp) alone, in the order report.html (html.hpp) keeps: the
// verdict, the broken expectations, the kernel and suspicions; a case x variant matrix of max
// error/bound, each cell marked with its result's standing (fields.hpp: a mutant silent as
// expected is no failure); the correct variants' headline measures (ULPs of A, well-conditioned
// ULPs, error/bound), each the worst case's; the skipped pairs counted, listed in a folded
// <details>; the mutants and the cases that caught them; every result with its findings, folded,
// or open as the kernel case by case for a `run --kernel` report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mqa::reports {

std::string markdown(const nlohmann::json& report);

}  // namespace mqa::reports
