// Reports of a run or a check, for people and for CI (reports/README.md documents every field):
// report.json's document (suite_json, schema "mqacheck.report") and the pieces of it the other
// writers and the command line share. The files a run writes, one per format, are the registry
// in formats.hpp; every file but report.json is made from report.json's content alone, so that
// `mqacheck merge` gives shards' reports identical to an unsharded run's. Files are written
// through a temporary name and renamed: never half a report; run's reports are put in place
// together (io::output_set).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "validator/compare/comparator.hpp"
#include "validator/io/output_path.hpp"
#include "validator/verdict/verdict.hpp"

namespace mqa::reports {

// report.json's schema and version: validator/verdict/report_document.hpp, where it is read back.
nlohmann::json judgement_json(const compare::judgement& j);
nlohmann::json suite_json(const verdict::suite_report& r);
// metrics.heat_map: the comparator's map as text (validator/verdict/heat_levels.hpp); null for an
// empty map.
nlohmann::json heat_map_json(const compare::heat_map& h);

// report.json's text: the document indented by two spaces, a newline at the end.
std::string report_json_text(const nlohmann::json& report);

// "16-hex-digit" inputs fingerprint, as `mqacheck gen` prints it.
std::string fingerprint_text(std::uint64_t fingerprint);

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

// What a reader who sees one line of a result needs first (a JUnit failure's message, certify's
// terminal): the first finding of a report.json result, described as above (detail and diagnosis
// included); for a result that could not be judged, the first line of its error; "" when it has
// neither.
std::string first_finding(const nlohmann::json& result);

// Writes a report whole (validator/io/atomic_file.hpp) to a path checked with
// io::resolve_output_file before the work that made the report.
void write_file(const io::output_file& file, const std::string& text);

}  // namespace mqa::reports
