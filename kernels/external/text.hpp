// Text that an adapter wrote (an error message, a label, its stderr, a line that broke the
// protocol), made fit for a report: every report format needs valid UTF-8, and an adapter's bytes
// are whatever it wrote. Text enters mqacheck through these functions, so nothing after them has
// to be tolerant of bad bytes.
//
// One rule everywhere: a byte that does not belong to a well-formed UTF-8 sequence (Unicode's
// table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF) is shown as \xNN, as
// quote() shows control bytes, so a reader sees which byte it was.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mqa::external {

// The length (1 to 4) of the well-formed UTF-8 sequence `s` starts with; 0 when it starts with a
// byte that begins none (or `s` is empty).
std::size_t utf8_sequence(std::string_view s);

// `bytes` with every byte outside a well-formed sequence replaced by \xNN; valid UTF-8 is
// returned unchanged.
std::string valid_utf8(std::string_view bytes);

// The longest start of `text` of at most `max_bytes` bytes that does not end inside a
// well-formed sequence (a byte outside one counts as a character of its own).
std::string_view cut_utf8(std::string_view text, std::size_t max_bytes);

// `bytes` with control bytes (a newline, an escape sequence) and bytes outside a well-formed
// sequence shown as \xNN: valid UTF-8 that stays on one line.
std::string escaped_bytes(std::string_view bytes);

// `text` for one line of a report: at most `limit` bytes of it, cut between characters, with
// control bytes (a newline, an escape sequence) and bytes outside UTF-8 shown as \xNN, and
// "... (N bytes)" after a cut. Always valid UTF-8 without control characters.
std::string one_line(std::string_view text, std::size_t limit);

}  // namespace mqa::external
