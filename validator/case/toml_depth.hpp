// A guard before the TOML parser. toml++ 3.3 (Debian 12's) bounds the nesting of arrays and inline
// tables (TOML_MAX_NESTED_VALUES, 256) but not that of the tables a key's dots make: a header
// `[a.a.a. ... .b]` or a key `a.a. ... .b = 1` of 50,000 parts overflows the stack inside
// toml::parse (about 20,000 parse on an 8 MiB stack). The depth of a file's tables is a header's
// parts plus the parts of the keys down one chain of inline tables, which one line holds (an
// inline table is one line), inside the parser's 256 levels of values: so a bound on the dots of
// the keys on one line keeps every file the parser reads far from that depth.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace mqa::cases {

// mqacheck's suites nest a few levels; a line whose keys hold more dots is refused unparsed.
inline constexpr std::size_t kMaxNestingPerLine = 1000;

struct text_position {
  std::size_t line = 1, column = 1;  // 1-based; the column counts bytes
};

// Where `text` first holds more than `limit` dots in keys (headers, keys before `=`, an inline
// table's keys) on one line, strings and comments aside; nullopt where it holds none.
std::optional<text_position> nesting_beyond(std::string_view text, std::size_t limit = kMaxNestingPerLine);

}  // namespace mqa::cases
