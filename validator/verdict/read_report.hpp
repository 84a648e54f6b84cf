// Reading report.json back (`mqacheck diff`, `merge`, `certify`; reports never run anything). A
// report must parse as JSON, say schema "mqacheck.report" and the schema version this mqacheck
// writes (kSchemaVersion, report_document.hpp), and hold every field the writers read, with the right type, heat maps
// of consistent geometry and no (case, variant) pair twice. Anything else is one input_error that
// names the path, the field ("results[3].metrics.ulp.max") and what is accepted: exit status 2.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

namespace mqa::verdict {

// `path` is a report.json, or a folder holding one (a `run --out` folder).
nlohmann::json read_report(const std::filesystem::path& path);

// The same checks on a document in memory; `where` names it in messages (its path).
void check_report(const nlohmann::json& report, std::string_view where);

// The path read_report reads for `path`: path/report.json for a folder.
std::filesystem::path report_path(const std::filesystem::path& path);

}  // namespace mqa::verdict
