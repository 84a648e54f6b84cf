// A report.json document (schema "mqacheck.report", reports/README.md documents every field) as
// the verdict layer reads it back for `diff`, `merge` and `certify`: its file name, schema and
// version, and the values those read from a result or a mutant. The writers that make it, and
// the other formats made from it, are in reports/ (reports/formats.hpp).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace mqa::verdict {

// The file a run's --out folder holds the document in; a folder given for a report means it.
inline constexpr std::string_view kReportFile = "report.json";
inline constexpr std::string_view kReportSchema = "mqacheck.report";
// Version 2: the build, the shard, the variants and cases (with inputs fingerprints),
// skipped pairs as objects, and a heat map per result.
inline constexpr int kSchemaVersion = 2;

// A report and the name messages give it (its path as given).
struct named_report {
  std::string name;
  const nlohmann::json* report = nullptr;  // checked by check_report (read_report.hpp)
};

// A measure: a number, "inf" / "-inf" / "nan" (JSON has no infinities), or null (not measured).
std::optional<double> measure(const nlohmann::json& value);

// "mask-leak x200, topk-mismatch x12", or "-" when the result has no finding; an external
// kernel's result that could not be judged shows "error: " and its error's first line.
std::string findings_summary(const nlohmann::json& result);

// Whether a mutant of a report ran on some case. One that every case refused (its bug needs inputs
// the suite does not hold: fp4 block scales) was not exercised, which is no blind check.
bool mutant_ran(const nlohmann::json& report, const nlohmann::json& mutant);

}  // namespace mqa::verdict
