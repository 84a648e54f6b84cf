#include "report_inputs.hpp"

#include <fmt/core.h>

#include "validator/input_error.hpp"
#include "validator/io/output_path.hpp"
#include "validator/verdict/read_report.hpp"

namespace mqa::cli {

namespace fs = std::filesystem;

report_input read_report_input(const std::string& given) {
  report_input in{given, verdict::report_path(given), {}};
  in.report = verdict::read_report(given);
  return in;
}

void refuse_overwriting(std::string_view option, const fs::path& folder, const std::vector<std::string>& files,
                        const std::vector<report_input>& inputs) {
  std::error_code ec;
  for (const auto& name : files) {
    const fs::path out = fs::weakly_canonical(io::follow_links(folder / name), ec);
    for (const auto& in : inputs) {
      const fs::path read = fs::weakly_canonical(io::follow_links(in.path), ec);
      if (!out.empty() && out == read)
        throw input_error(fmt::format("{} {}: would replace {}, one of the reports given: choose another folder",
                                      option, folder.string(), in.path.string()));
    }
  }
}

}  // namespace mqa::cli
