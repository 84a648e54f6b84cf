// Reports of a run or a check, for people and for CI:
//   JSON      the whole result, documented in reports/README.md (schema "mqacheck.report", version 1)
//   JUnit XML one testcase per case x variant, metrics as properties, findings in the failure text
//   Markdown  a summary fit for a pull-request comment or a CI step summary
// Files are written through a temporary name and renamed: never half a report; run's three
// reports are put in place together (io::write_together).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "validator/compare/comparator.hpp"
#include "validator/io/output_path.hpp"
#include "validator/verdict/verdict.hpp"

namespace mqa::reports {

inline constexpr int kSchemaVersion = 1;

nlohmann::json judgement_json(const compare::judgement& j);
nlohmann::json suite_json(const verdict::suite_report& r);
std::string junit_xml(const verdict::suite_report& r);
std::string markdown(const verdict::suite_report& r);

// A metric for a table: "-" when nothing was there to measure (nothing compared, no ranked row).
std::string shown(std::optional<double> value, int significant_digits = 3);
// The ULP figures of a table row: max and p99, "-" when no finite pair was compared.
std::string shown_ulps(const compare::ulp_histogram& h, double percentile);

// "mask-leak x200, topk-mismatch x12", or "-" when there is no finding.
std::string summary(const compare::judgement& j);
// A result row's findings column: summary(judgement), or "error: " and the error's first line.
std::string summary(const verdict::case_result& r);

// One line per finding: "mask-shift x127 at (0, 71): expected 0xFF800000 (-inf), got 0x3F800000 (1); ...",
// ending with " - diagnosis: ..." where validator/diagnose reproduced its cause.
std::string describe(const compare::finding& f);

// Writes a report whole (validator/io/atomic_file.hpp) to a path checked with
// io::resolve_output_file before the work that made the report.
void write_file(const io::output_file& file, const std::string& text);

}  // namespace mqa::reports
