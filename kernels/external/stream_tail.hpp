// The end of a stream that may never end: an adapter's stderr, kept in memory and bounded, so
// that an adapter printing without pause costs neither disk nor memory and its last words are
// still there to explain a failure.
//
// Bytes are counted from the first one appended; a mark is that count at some moment (before a
// case), and since(mark) is what came after it, as far as it is still held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mqa::external {

class stream_tail {
 public:
  // Holds at least the last `keep_bytes` bytes appended (at most twice that: old bytes are
  // dropped in blocks rather than one append at a time).
  explicit stream_tail(std::size_t keep_bytes = 64 << 10) : keep_(keep_bytes) {}

  void append(std::string_view bytes);

  std::uint64_t mark() const { return total_; }                    // bytes appended so far
  std::uint64_t dropped() const { return total_ - held_.size(); }  // bytes no longer held

  // The text appended after `mark`, its last `max_bytes` at most: valid UTF-8 (text.hpp), trailing
  // blank space removed. When it had to be cut (bytes dropped, or more than max_bytes), it starts
  // at a line, or where no line starts in it, at a character. Empty for a mark not yet reached.
  std::string since(std::uint64_t mark, std::size_t max_bytes) const;

 private:
  std::size_t keep_;
  std::string held_;        // the last bytes appended
  std::uint64_t total_ = 0;  // bytes appended, held or not
};

}  // namespace mqa::external
