// Reading the values of a report.json document (checked by validator/verdict/read_report.hpp) for
// the writers that work from the JSON alone: JUnit, Markdown, HTML, the diff's text, certificate.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

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

// A finding as the comparator made it, its diagnosis included, for describe() (report.hpp).
compare::finding finding_of(const nlohmann::json& finding);

}  // namespace mqa::reports
