#include "report_commit.hpp"

#include <fmt/core.h>

namespace mqa::verdict {

std::optional<std::string> unreproducible_build(const nlohmann::json& report) {
  const std::string commit = report.at("mqacheck").at("commit").get<std::string>();
  constexpr std::string_view kDirty = "-dirty";
  if (commit == "unknown" || commit.empty())
    return fmt::format("made by an mqacheck of unknown commit '{}' (built outside a git checkout)", commit);
  if (commit.size() >= kDirty.size() && commit.compare(commit.size() - kDirty.size(), kDirty.size(), kDirty) == 0)
    return fmt::format("made by an mqacheck built from commit '{}', a tree with uncommitted changes", commit);
  return std::nullopt;
}

}  // namespace mqa::verdict
