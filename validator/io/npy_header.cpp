#include "npy_header.hpp"

#include <fmt/core.h>

#include <array>
#include <cstdint>
#include <limits>
#include <optional>

namespace mqa::io {
namespace {

enum class key : std::uint8_t { descr, fortran_order, shape };
constexpr std::array<std::string_view, 3> kKeys{"descr", "fortran_order", "shape"};

// A cursor over the header text; every error says what was expected at which character (1-based,
// as a person counts in `head -c`).
class reader {
 public:
  explicit reader(std::string_view text) : text_(text) {}

  [[noreturn]] void fail(std::string_view expected) const {
    const std::string found =
        at_ < text_.size() ? fmt::format("'{}'", printable(text_[at_])) : std::string("the end of the header");
    throw npy_header_syntax(fmt::format("at character {}: expected {}, found {}", at_ + 1, expected, found));
  }

  bool done() const { return at_ >= text_.size(); }
  char peek() const { return done() ? '\0' : text_[at_]; }
  // Between tokens inside the braces; `also_line_breaks` false for the padding after them.
  void skip_space(bool also_line_breaks = true) {
    while (!done() && (peek() == ' ' || peek() == '\t' || (also_line_breaks && peek() == '\n'))) ++at_;
  }
  bool take(char c) {
    skip_space();
    if (peek() != c) return false;
    ++at_;
    return true;
  }
  void expect(char c, std::string_view what) {
    if (!take(c)) fail(what);
  }

  std::string string() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("a string in quotes");
    const std::size_t start = ++at_;
    while (!done() && peek() != quote) {
      if (peek() == '\\' || peek() == '\n' || peek() == '\r') fail("the closing quote (no escapes or line breaks)");
      ++at_;
    }
    if (done()) fail("the closing quote");
    return std::string(text_.substr(start, at_++ - start));
  }

  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}})
      if (text_.substr(at_).starts_with(word) && !is_name_char(at(at_ + word.size()))) {
        at_ += word.size();
        return value;
      }
    fail("True or False");
  }

  std::size_t integer() {
    skip_space();
    if (!is_digit(peek())) fail("a non-negative decimal integer");
    if (peek() == '0' && is_digit(at(at_ + 1))) fail("an integer without leading zeros");
    std::uint64_t value = 0;
    while (is_digit(peek())) {
      const auto digit = static_cast<std::uint64_t>(peek() - '0');
      if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) fail("an integer below 2^64");
      value = value * 10 + digit;
      ++at_;
    }
    if (is_name_char(peek()) || peek() == '.') fail("',' or ')' after an integer");
    return static_cast<std::size_t>(value);
  }

  std::vector<std::size_t> tuple() {
    skip_space();
    if (peek() != '(') fail("a tuple such as (3, 4) or (5,) or ()");
    ++at_;
    std::vector<std::size_t> values;
    if (take(')')) return values;
    values.push_back(integer());
    // "(5)" is the integer 5, not a tuple: a one-element tuple needs its comma.
    if (!take(',')) fail(peek() == ')' ? "',' before ')' (a one-element tuple is written (5,))" : "',' between integers");
    for (;;) {
      if (take(')')) return values;
      values.push_back(integer());
      if (take(')')) return values;
      if (!take(',')) fail("',' between integers, or ')'");
    }
  }

  std::size_t position() const { return at_; }

 private:
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool is_name_char(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
  }
  static std::string printable(char c) {
    if (c == '\n') return "\\n";
    if (c == '\t') return "\\t";
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u >= 0x7F ? fmt::format("\\x{:02x}", u) : std::string(1, c);
  }
  char at(std::size_t i) const { return i < text_.size() ? text_[i] : '\0'; }

  std::string_view text_;
  std::size_t at_ = 0;
};

std::optional<key> key_named(std::string_view name) {
  for (std::size_t i = 0; i < kKeys.size(); ++i)
    if (kKeys[i] == name) return static_cast<key>(i);
  return std::nullopt;
}

}  // namespace

npy_header parse_npy_header(std::string_view text) {
  if (text.size() > kMaxNpyHeaderLength)
    throw npy_header_syntax(fmt::format("{} characters long; NumPy reads headers of at most {}", text.size(),
                                        kMaxNpyHeaderLength));
  if (text.empty() || text.back() != '\n') throw npy_header_syntax("it does not end with a line break");
  reader r(text.substr(0, text.size() - 1));
  if (r.peek() != '{') r.fail("'{' at the start of the header");
  r.take('{');

  npy_header header;
  std::array<bool, kKeys.size()> seen{};
  while (!r.take('}')) {
    const std::size_t key_at = r.position();
    const std::string name = r.string();
    const std::optional<key> k = key_named(name);
    if (!k)
      throw npy_header_syntax(
          fmt::format("at character {}: unknown key '{}' (accepted: exactly 'descr', 'fortran_order', 'shape')",
                      key_at + 1, name));
    if (seen[static_cast<std::size_t>(*k)])
      throw npy_header_syntax(fmt::format("at character {}: key '{}' given twice", key_at + 1, name));
    seen[static_cast<std::size_t>(*k)] = true;
    r.expect(':', "':' after the key");
    switch (*k) {
      case key::descr: header.typestring = r.string(); break;
      case key::fortran_order: header.fortran_order = r.boolean(); break;
      case key::shape: header.shape = r.tuple(); break;
    }
    if (r.take('}')) break;
    r.expect(',', "',' or '}' after a value");
  }
  for (std::size_t i = 0; i < kKeys.size(); ++i)
    if (!seen[i]) throw npy_header_syntax(fmt::format("the key '{}' is missing", kKeys[i]));
  r.skip_space(false);
  if (!r.done()) r.fail("only spaces after the closing '}'");
  return header;
}

}  // namespace mqa::io
