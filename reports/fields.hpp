// Reading the values of a report.json document (checked by read.hpp) for the writers that work
// from the JSON alone: JUnit, Markdown, HTML, diff, merge, certificate.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "validator/compare/finding.hpp"

namespace mqa::reports {

// A measure: a number, "inf" / "-inf" / "nan" (JSON has no infinities), or null (not measured).
std::optional<double> measure(const nlohmann::json& value);

// A measure for a table with `significant_digits`, an integer as it is; "-" for null.
std::string shown(const nlohmann::json& value, int significant_digits = 3);

// A finding as the comparator made it, for describe() (report.hpp).
compare::finding finding_of(const nlohmann::json& finding);

// "mask-leak x200, topk-mismatch x12", or "-" when the result has no finding; an external
// kernel's result that could not be judged shows "error: " and its error's first line.
std::string findings_summary(const nlohmann::json& result);

// A Markdown table cell: one line, and a '|' that does not end the cell.
std::string markdown_cell(std::string_view text);

// Text inside XML or HTML elements and attributes.
std::string escape_markup(std::string_view text);

// Whether a mutant of a report ran on some case. One that every case refused (its bug needs inputs
// the suite does not hold: fp4 block scales) was not exercised, which is no blind check.
bool mutant_ran(const nlohmann::json& report, const nlohmann::json& mutant);

}  // namespace mqa::reports
