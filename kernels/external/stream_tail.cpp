#include "stream_tail.hpp"

#include <algorithm>

#include "text.hpp"

namespace mqa::external {
namespace {

// `text` less its start up to the first line after `from`; where none starts, from the first
// character boundary at or after `from`.
std::string from_a_line(const std::string& text, std::size_t from) {
  if (from == 0) return text;
  if (const auto newline = text.find('\n', from - 1); newline != std::string::npos) return text.substr(newline + 1);
  while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) ++from;
  return text.substr(from);
}

}  // namespace

void stream_tail::append(std::string_view bytes) {
  total_ += bytes.size();
  if (bytes.size() >= keep_) {
    held_.assign(bytes.substr(bytes.size() - keep_));
    return;
  }
  held_ += bytes;
  if (held_.size() > 2 * keep_) held_.erase(0, held_.size() - keep_);
}

std::string stream_tail::since(std::uint64_t mark, std::size_t max_bytes) const {
  if (mark >= total_ || max_bytes == 0) return "";
  const std::uint64_t first_held = total_ - held_.size();
  const bool lost_start = mark < first_held;
  const std::size_t begin = static_cast<std::size_t>(std::max(mark, first_held) - first_held);
  // Raw bytes first: a cut line is dropped whole, before its bytes are made text.
  std::string raw = held_.substr(begin);
  if (lost_start) raw = from_a_line(raw, 1);
  if (raw.size() > max_bytes) raw = from_a_line(raw, raw.size() - max_bytes);
  // \xNN takes four bytes for one: the text may have grown past max_bytes again.
  std::string text = valid_utf8(raw);
  if (text.size() > max_bytes) text = from_a_line(text, text.size() - max_bytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '\t'))
    text.pop_back();
  return text;
}

}  // namespace mqa::external
