// Whether the mqacheck that made a report can be rebuilt: report.json records the commit it was
// built from (reports/build_info.cmake), "<commit>-dirty" when tracked files differed from it and
// "unknown" outside a git checkout. A baseline made by such a build vouches for code nobody can
// check out again: `certify` refuses it unless told (--accept-dirty-baseline), `diff` warns.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mqa::verdict {

// Why the report's mqacheck cannot be rebuilt from its recorded commit ("built from commit
// '351768e5f35a-dirty', a tree with uncommitted changes"), or nullopt.
std::optional<std::string> unreproducible_build(const nlohmann::json& report);

}  // namespace mqa::verdict
