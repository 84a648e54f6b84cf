#include "fields.hpp"

#include <fmt/core.h>

namespace mqa::reports {

std::string shown(const nlohmann::json& v, int digits) {
  if (v.is_number_integer()) return fmt::format("{}", v.get<std::int64_t>());
  if (v.is_number_unsigned()) return fmt::format("{}", v.get<std::uint64_t>());
  const auto x = measure(v);
  return x ? fmt::format("{:.{}g}", *x, digits) : std::string("-");
}

compare::finding finding_of(const nlohmann::json& f) {
  compare::finding out;
  out.kind = names::parse(compare::kFindingClassNames, f.at("class").get<std::string>())
                 .value_or(compare::finding_class::error_bound);
  out.count = f.at("count").get<std::int64_t>();
  if (const auto& first = f.at("first"); first.is_array() && first.size() == 2) {
    out.first_row = first[0].get<std::int64_t>();
    out.first_col = first[1].get<std::int64_t>();
  }
  out.expected_bits = static_cast<std::uint32_t>(std::stoul(f.at("expected_bits").get<std::string>(), nullptr, 16));
  out.actual_bits = static_cast<std::uint32_t>(std::stoul(f.at("actual_bits").get<std::string>(), nullptr, 16));
  out.bound = measure(f.at("bound")).value_or(0);
  out.detail = f.at("detail").get<std::string>();
  // Absent in reports of a run without diagnosis; null where nothing reproduced the finding.
  if (const auto d = f.find("diagnosis"); d != f.end() && d->is_object())
    out.diagnosis = compare::likely_cause{.cause = d->at("cause").get<std::string>(),
                                          .bit_for_bit = d->at("bit_for_bit").get<bool>(),
                                          .sentence = d->at("sentence").get<std::string>()};
  return out;
}

}  // namespace mqa::reports
