// A guard before the TOML parser. toml++ 3.3 (Debian 12's) bounds the nesting of arrays and inline
// tables (TOML_MAX_NESTED_VALUES, 256) but not that of the tables dotted keys and headers make:
// `[a.a.a. ... .b]` 50,000 parts deep overflows the stack inside toml::parse. What one line of TOML
// nests is bounded by its dots, brackets and braces outside strings and comments (a header's path,
// a key's parts, a value's arrays and inline tables), and the nesting of a file by two lines' (a
// header's and a key's) and the parser's own 256: so a bound per line keeps every file the parser
// reads far from the depth that overflows (about 20,000 parts parse on an 8 MiB stack).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace mqa::cases {

// mqacheck's suites nest a few levels; a line past this is refused before it is parsed.
inline constexpr std::size_t kMaxNestingPerLine = 1000;

struct text_position {
  std::size_t line = 1, column = 1;  // 1-based; the column counts bytes
};

// Where `text` first holds more than `limit` dots, opening brackets and opening braces on one line
// outside strings and comments; nullopt where it holds none.
std::optional<text_position> nesting_beyond(std::string_view text, std::size_t limit = kMaxNestingPerLine);

}  // namespace mqa::cases
