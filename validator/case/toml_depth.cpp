#include "toml_depth.hpp"

namespace mqa::cases {

std::optional<text_position> nesting_beyond(std::string_view text, std::size_t limit) {
  enum class in { code, basic, literal, multiline_basic, multiline_literal, comment };
  in state = in::code;
  text_position at;
  std::size_t count = 0;
  const auto starts = [&](std::size_t i, std::string_view s) { return text.substr(i, s.size()) == s; };
  for (std::size_t i = 0; i < text.size(); ++i, ++at.column) {
    const char c = text[i];
    if (c == '\n') {
      ++at.line, at.column = 0, count = 0;
      if (state != in::multiline_basic && state != in::multiline_literal) state = in::code;
      continue;
    }
    switch (state) {
      case in::code:
        if (c == '#') state = in::comment;
        else if (starts(i, "\"\"\"")) state = in::multiline_basic, i += 2, at.column += 2;
        else if (starts(i, "'''")) state = in::multiline_literal, i += 2, at.column += 2;
        else if (c == '"') state = in::basic;
        else if (c == '\'') state = in::literal;
        else if ((c == '.' || c == '[' || c == '{') && ++count > limit) return at;
        break;
      case in::basic:
      case in::multiline_basic:
        if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') ++i, ++at.column;  // an escaped character
        else if (state == in::basic && c == '"') state = in::code;
        else if (state == in::multiline_basic && starts(i, "\"\"\"")) state = in::code, i += 2, at.column += 2;
        break;
      case in::literal:
        if (c == '\'') state = in::code;
        break;
      case in::multiline_literal:
        if (starts(i, "'''")) state = in::code, i += 2, at.column += 2;
        break;
      case in::comment: break;
    }
  }
  return std::nullopt;
}

}  // namespace mqa::cases
