// Reading suites: TOML (TOML++) -> case_spec, defaults applied, every key checked.
//
// Bad input throws input_error with one message naming FILE:LINE:COLUMN, the key, what was
// wrong and what is accepted. Unknown keys are errors: a typo is never ignored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "case.hpp"

namespace mqa::cases {

// A suite file is a regular file of at most kMaxSuiteBytes (a bundle's case.toml too).
inline constexpr std::uintmax_t kMaxSuiteBytes = std::uintmax_t{1} << 20;
suite load_suite(const std::filesystem::path& file);

// The same from text in memory; `source_name` stands for the file in messages.
suite parse_suite(std::string_view text, const std::string& source_name);

// The case called `name`, or input_error listing the suite's case names.
const case_spec& find_case(const suite& s, std::string_view name);

}  // namespace mqa::cases
