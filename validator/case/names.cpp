// The spelling of every enumerated case key, from its table in case.hpp (reference/names/names.hpp reads
// each table both ways).
#include "case.hpp"

namespace mqa::cases {

std::string_view to_string(scale_kind v) { return names::name_of(kScaleKindNames, v); }
std::string_view to_string(distribution v) { return names::name_of(kDistributionNames, v); }
std::string_view to_string(special_value v) { return names::name_of(kSpecialValueNames, v); }
std::string_view to_string(special_target v) { return names::name_of(kSpecialTargetNames, v); }
std::string_view to_string(layout_kind v) { return names::name_of(kLayoutKindNames, v); }
std::string_view to_string(paged_fill v) { return names::name_of(kPagedFillNames, v); }
std::string_view to_string(unused_entry v) { return names::name_of(kUnusedEntryNames, v); }

bool is_k_scale_special(special_value v) {
  return v == special_value::zero_k_scale || v == special_value::negative_k_scale;
}

}  // namespace mqa::cases
