#include "text.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace mqa::external {

std::size_t utf8_sequence(std::string_view s) {
  if (s.empty()) return 0;
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  // The second byte's range depends on the lead (this is what excludes overlong forms,
  // surrogates and code points past U+10FFFF); every later byte is 80..BF.
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  else if (lead == 0xE0) length = 3, low = 0xA0;
  else if (lead >= 0xE1 && lead <= 0xEC) length = 3;
  else if (lead == 0xED) length = 3, high = 0x9F;
  else if (lead >= 0xEE && lead <= 0xEF) length = 3;
  else if (lead == 0xF0) length = 4, low = 0x90;
  else if (lead >= 0xF1 && lead <= 0xF3) length = 4;
  else if (lead == 0xF4) length = 4, high = 0x8F;
  else return 0;
  if (s.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return length;
}

std::string valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    if (const std::size_t n = utf8_sequence(bytes.substr(i)); n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(bytes[i]));
      ++i;
    }
  }
  return out;
}

std::string_view cut_utf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = 0;
  while (end < text.size()) {
    const std::size_t n = std::max<std::size_t>(utf8_sequence(text.substr(end)), 1);
    if (end + n > max_bytes) break;
    end += n;
  }
  return text.substr(0, end);
}

std::string escaped_bytes(std::string_view bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t n = utf8_sequence(bytes.substr(i));
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (n == 0 || c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
      ++i;
    } else {
      out += bytes.substr(i, n);
      i += n;
    }
  }
  return out;
}

std::string one_line(std::string_view text, std::size_t limit) {
  const std::string_view shown = cut_utf8(text, limit);
  std::string out = escaped_bytes(shown);
  if (shown.size() < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

}  // namespace mqa::external
