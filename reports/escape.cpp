#include "escape.hpp"

#include <fmt/core.h>

#include <array>
#include <cstdint>
#include <optional>

namespace mqa::reports {
namespace {

struct code_point_range {
  char32_t first, last;
};
// Shown as escapes: they are invisible, or reorder or break the text around them (the bidi
// controls are how a label would make a report show what it does not say).
constexpr std::array<code_point_range, 8> kShownAsEscapes{{
    {0x0000, 0x001F},  // C0 controls
    {0x007F, 0x009F},  // DEL, C1 controls
    {0x061C, 0x061C},  // Arabic letter mark
    {0x200B, 0x200F},  // zero-width space, joiners, left-to-right and right-to-left marks
    {0x2028, 0x202E},  // line and paragraph separators, bidi embeddings and overrides (U+202A-202E)
    {0x2060, 0x2069},  // word joiner, invisible operators, bidi isolates (U+2066-2069)
    {0xFEFF, 0xFEFF},  // zero-width no-break space (byte-order mark)
    {0xFFF9, 0xFFFB},  // interlinear annotation controls
}};

// Unicode's noncharacters (U+FDD0-FDEF and the last two code points of every plane) are shown
// too: they are for a program's internal use, and U+FFFE and U+FFFF are not characters XML 1.0
// admits at all (a report.xml holding one is not well-formed).
bool noncharacter(char32_t c) { return (c >= 0xFDD0 && c <= 0xFDEF) || (c & 0xFFFE) == 0xFFFE; }

bool shown_as_escape(char32_t c) {
  for (const auto& r : kShownAsEscapes)
    if (c >= r.first && c <= r.last) return true;
  return noncharacter(c);
}

// The code point of the UTF-8 sequence at the front of `s` and its length; nullopt for a byte
// that does not start a well-formed sequence (overlong forms and surrogates included).
std::optional<std::pair<char32_t, std::size_t>> next_code_point(std::string_view s) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return std::pair{char32_t{lead}, std::size_t{1}};
  const std::size_t length = lead >= 0xC2 && lead <= 0xDF   ? 2
                             : lead >= 0xE0 && lead <= 0xEF ? 3
                             : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                            : 0;
  if (length == 0 || s.size() < length) return std::nullopt;
  char32_t c = lead & (0xFF >> (length + 1));
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return std::nullopt;
    c = (c << 6) | (byte(i) & 0x3F);
  }
  constexpr std::array<char32_t, 5> kSmallest{0, 0, 0x80, 0x800, 0x10000};
  if (c < kSmallest[length] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return std::nullopt;
  return std::pair{c, length};
}

// Walks `text` character by character: `ascii` decides each ASCII character that is not shown as
// an escape, every other well-formed character is kept, and the rest is written visibly with
// `backslash` as the escape's first character ("\\" where the backslash itself is markup).
template <class Ascii>
std::string escaped(std::string_view text, std::string_view backslash, Ascii ascii, bool keep_lines = true) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const auto next = next_code_point(text);
    if (!next) {
      out += fmt::format("{}x{:02x}", backslash, static_cast<unsigned char>(text.front()));
      text.remove_prefix(1);
      continue;
    }
    const auto [c, length] = *next;
    if ((keep_lines && (c == '\n' || c == '\t' || c == '\r')) || !shown_as_escape(c)) {
      if (c < 0x80) ascii(out, static_cast<char>(c));
      else out += text.substr(0, length);
    } else {
      out += c > 0xFFFF ? fmt::format("{}U{:08x}", backslash, static_cast<std::uint32_t>(c))
                        : fmt::format("{}u{:04x}", backslash, static_cast<std::uint32_t>(c));
    }
    text.remove_prefix(length);
  }
  return out;
}

// HTML's specials as entities: true where `c` was one. Quotes matter only in attribute values,
// which Markdown text cannot open once < is an entity.
bool add_entity(std::string& out, char c, bool quotes = true) {
  if (!quotes && (c == '"' || c == '\'')) return false;
  switch (c) {
    case '&': out += "&amp;"; return true;
    case '<': out += "&lt;"; return true;
    case '>': out += "&gt;"; return true;
    case '"': out += "&quot;"; return true;
    case '\'': out += "&#39;"; return true;
    default: return false;
  }
}

constexpr std::string_view kMarkdownSpecials = "\\`*_[]|~";

}  // namespace

std::string markdown_text(std::string_view text) {
  return escaped(text, "\\\\", [](std::string& out, char c) {
    if (c == '\n' || c == '\t' || c == '\r') out += ' ';
    else if (add_entity(out, c, false)) return;
    else if (kMarkdownSpecials.find(c) != std::string_view::npos) (out += '\\') += c;
    else out += c;
  });
}

std::string escape_markup(std::string_view text) {
  return escaped(text, "\\", [](std::string& out, char c) {
    if (!add_entity(out, c)) out += c;
  });
}

std::string terminal_text(std::string_view text) {
  return escaped(text, "\\", [](std::string& out, char c) { out += c; });
}

std::string terminal_line(std::string_view text) {
  return escaped(text, "\\", [](std::string& out, char c) { out += c; }, false);
}

}  // namespace mqa::reports
