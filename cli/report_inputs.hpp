// Reports given on the command line (`diff`, `merge`, `certify --baseline`): read and checked
// (validator/verdict/read_report.hpp), and kept from being overwritten by the command's own outputs.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace mqa::cli {

struct report_input {
  std::string name;  // as given
  std::filesystem::path path;  // the report.json read (inside a folder given)
  nlohmann::json report;
};

// input_error (exit status 2) for an unreadable file, bad JSON, another schema or version.
report_input read_report_input(const std::string& given);

// input_error when one of `files` in `folder` (an --out folder) is one of the inputs.
void refuse_overwriting(std::string_view option, const std::filesystem::path& folder,
                        const std::vector<std::string>& files, const std::vector<report_input>& inputs);

}  // namespace mqa::cli
