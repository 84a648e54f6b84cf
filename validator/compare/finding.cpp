#include "finding.hpp"

#include <array>

namespace mqa::compare {
namespace {
constexpr std::array<std::string_view, kFindingClasses> kNames{
    "mask-leak", "mask-hole", "mask-shift",  "nan",       "inf",           "error-bound",
    "scale-factor", "topk-mismatch", "unwritten", "nondeterministic", "out-of-bounds"};
}  // namespace

std::string_view to_string(finding_class c) { return kNames[static_cast<std::size_t>(c)]; }

std::optional<finding_class> parse_finding_class(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<finding_class>(i);
  return std::nullopt;
}

std::string finding_class_names() {
  std::string list;
  for (const auto name : kNames) list += (list.empty() ? "" : ", ") + std::string(name);
  return list;
}

}  // namespace mqa::compare
