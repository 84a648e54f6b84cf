// Where a value came from, so that a check made after reading can still point at the line and
// column the user has to fix.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace mqa::cases {

struct location {
  std::string file;
  std::uint32_t line = 0, column = 0;
};

// "file:line:column"
std::string to_string(const location& where);

// The location of every key a case read, by dotted path: "m", "layout.window", "layout.ks[3]".
// The empty path is the case's own table (its [[case]] header).
using key_sources = std::map<std::string, location, std::less<>>;

// Throws input_error: "FILE:LINE:COL: case 'NAME': key 'KEY': PROBLEM". An empty case name
// leaves the case out (suite-level keys); an empty key leaves the key out.
[[noreturn]] void fail_at(const location& where, std::string_view case_name, std::string_view key,
                          std::string_view problem);

}  // namespace mqa::cases
