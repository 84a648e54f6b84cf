// A diff of two reports (validator/verdict/diff.hpp, `mqacheck diff`) written out: as JSON for
// machines (`--json`), as Markdown for a pull-request comment (`--markdown`, and the certificate's
// diff section), and as a table for a terminal.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "validator/verdict/diff.hpp"

namespace mqa::reports {

nlohmann::json diff_json(const verdict::report_diff& d);   // schema "mqacheck.diff", version 1
std::string diff_markdown(const verdict::report_diff& d);  // for a pull-request comment
std::string diff_table(const verdict::report_diff& d);     // for a terminal

}  // namespace mqa::reports
