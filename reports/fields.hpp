// Reading the values of a report.json document (checked by validator/verdict/read_report.hpp) for
// the writers that work from the JSON alone: JUnit, Markdown, HTML, the diff's text, certificate.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/escape.hpp"  // every writer embeds text from elsewhere
#include "validator/compare/finding.hpp"
#include "validator/verdict/report_document.hpp"

namespace mqa::reports {

// What the verdict layer reads from a report too (validator/verdict/report_document.hpp): a measure
// ("inf" for infinity, null for not measured), a result's findings in one line ("mask-leak x200,
// topk-mismatch x12"), whether a mutant ran on some case.
using verdict::findings_summary;
using verdict::measure;
using verdict::mutant_ran;

// A measure for a table with `significant_digits`, an integer as it is; "-" for null.
std::string shown(const nlohmann::json& value, int significant_digits = 3);

// "1 pair", "3 pairs": a count and its noun, plural but for one.
std::string counted(std::size_t n, const char* noun);

// A finding as the comparator made it, its diagnosis included, for describe() (report.hpp).
compare::finding finding_of(const nlohmann::json& finding);

// How a result stands against the run's expectations, for the case x variant matrices:
//   "pass"   a correct variant without findings;
//   "caught" a mutant with a finding of a class its bug produces;
//   "silent" a mutant without findings, "other" one with findings of other classes: as expected
//            while some case of the suite catches the mutant (mutants are judged over the suite);
//   "broken" a correct variant with findings, a case that could not be judged, and every result of
//            a mutant no case caught (unless the report is one shard: merge judges coverage).
std::string_view standing(const nlohmann::json& report, const nlohmann::json& result);
inline bool breaks_expectation(const nlohmann::json& report, const nlohmann::json& result) {
  return standing(report, result) == "broken";
}
// A mutant's result (`kind` "mutant"): planted bugs, which the expectations want caught.
bool is_mutant(const nlohmann::json& result);

// The rows and columns of the case x variant matrices: the report's variants and cases in their
// order, then those of results neither lists.
std::vector<std::string> variant_order(const nlohmann::json& report);
std::vector<std::string> case_order(const nlohmann::json& report);

// The headline measures of a correct variant (docs/contracts.md): ULPs of A, raw ULPs over the
// well-conditioned elements and error/bound. Over several cases each is the worst case's: the
// largest percentile, maximum and error/bound, the smallest well-conditioned share; unset where
// nothing was measured (an older report lacks the ULP scales).
struct headline {
  std::string variant;
  std::size_t cases = 0;  // results with metrics
  std::optional<double> magnitude_p50, magnitude_p99, magnitude_p999, magnitude_max;
  std::optional<double> conditioned_share, conditioned_p99, conditioned_max;
  std::optional<double> error_over_bound;
  std::string worst_case;  // the case of the largest error/bound
};
// One result's.
headline headline_of(const nlohmann::json& result);
// Every correct variant's over its cases, in variant_order.
std::vector<headline> headlines(const nlohmann::json& report);

// A result's top-k decidedness (metrics "topk_decidedness", reference/topk/decidedness.hpp) in one
// phrase: "30/32 rows decided (10/12 longer than k, median 0 ambiguous there), worst row 7: 3
// ambiguous of k = 16"; "-" where
// no row had a window or the report predates it.
std::string decidedness_text(const nlohmann::json& metrics);

// A measure for a table, as shown() writes it: "inf", "-" when unset.
std::string shown_measure(std::optional<double> value, int significant_digits = 3);

}  // namespace mqa::reports
