#include "toml_depth.hpp"

#include <vector>

namespace mqa::cases {

// Two readings at once: the lexical one (code, one of TOML's four strings, a comment) and, in
// code, where a dot is: in a key (a table header's path, a key before `=`, a key of an inline
// table) or in a value (a float, a date), which nests nothing. Brackets and braces in values are
// the parser's own bound to keep (TOML_MAX_NESTED_VALUES); a value's containers are tracked only
// to know when a key begins again (after `{` and after `,` inside one).
std::optional<text_position> nesting_beyond(std::string_view text, std::size_t limit) {
  enum class in { code, basic, literal, multiline_basic, multiline_literal, comment };
  in state = in::code;
  bool in_key = true, in_header = false, line_start = true;
  std::vector<char> containers;  // the open arrays ('[') and inline tables ('{') of a value
  text_position at;
  std::size_t count = 0;
  // The run of `quote` at i (a multi-line string closes on three and keeps up to two more as text).
  const auto run_of = [&](std::size_t i, char quote) {
    std::size_t n = 0;
    while (i + n < text.size() && text[i + n] == quote) ++n;
    return n;
  };
  for (std::size_t i = 0; i < text.size(); ++i, ++at.column) {
    const char c = text[i];
    if (c == '\n') {
      ++at.line, at.column = 0, count = 0;
      if (state != in::multiline_basic && state != in::multiline_literal) state = in::code;
      if (containers.empty()) in_key = true, in_header = false, line_start = true;
      continue;
    }
    switch (state) {
      case in::code: {
        const bool first = line_start && c != ' ' && c != '\t' && c != '\r';
        if (first) line_start = false;
        if (c == '#') {
          state = in::comment;
        } else if (c == '"' || c == '\'') {
          const std::size_t quotes = run_of(i, c);
          if (quotes >= 3) {
            state = c == '"' ? in::multiline_basic : in::multiline_literal;
            i += 2, at.column += 2;
          } else {
            state = c == '"' ? in::basic : in::literal;
          }
        } else if (first && c == '[' && containers.empty()) {
          in_header = true;  // [table] or [[array of tables]]: a path of keys
        } else if (in_header) {
          if (c == '.' && ++count > limit) return at;
          if (c == ']') in_header = text.substr(i + 1, 1) == "]";  // [[...]]'s second bracket
        } else if (in_key) {
          if (c == '.' && ++count > limit) return at;
          if (c == '=') in_key = false;
          if (c == '}' && !containers.empty()) containers.pop_back(), in_key = false;  // an empty inline table
        } else {  // in a value
          if (c == '{') containers.push_back('{'), in_key = true;
          else if (c == '[') containers.push_back('[');
          else if ((c == ']' || c == '}') && !containers.empty()) containers.pop_back();
          else if (c == ',' && !containers.empty()) in_key = containers.back() == '{';
        }
        break;
      }
      case in::basic:
      case in::multiline_basic:
        if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
          ++i, ++at.column;  // an escaped character
        } else if (state == in::basic && c == '"') {
          state = in::code;
        } else if (state == in::multiline_basic && c == '"' && run_of(i, '"') >= 3) {
          const std::size_t quotes = run_of(i, '"');  // up to two of them are the string's own
          state = in::code, i += quotes - 1, at.column += quotes - 1;
        }
        break;
      case in::literal:
        if (c == '\'') state = in::code;
        break;
      case in::multiline_literal:
        if (c == '\'' && run_of(i, '\'') >= 3) {
          const std::size_t quotes = run_of(i, '\'');
          state = in::code, i += quotes - 1, at.column += quotes - 1;
        }
        break;
      case in::comment: break;
    }
  }
  return std::nullopt;
}

}  // namespace mqa::cases
