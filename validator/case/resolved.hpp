// The resolved case: a case with every key written out, defaults applied, as a one-case suite
// that load_suite reads back to the same case_spec. A bundle's case.toml is this text.
#pragma once

#include <string>
#include <string_view>

#include "case.hpp"

namespace mqa::cases {

// `topk` is written when set; a bundle sets it (layout::default_topk) before writing.
// The bound is written only when set: its absence means "no clamp" (case.hpp).
std::string resolved_toml(const case_spec& c, std::string_view suite_name);

}  // namespace mqa::cases
