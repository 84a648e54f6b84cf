// Text that did not come from mqacheck (an adapter's label and errors, a user's suite, case and
// file names, the kernel command), made safe to embed in a report or print: it can neither add markup nor
// change what the text around it looks like. Characters a reader must see rather than obey (C0
// and C1 controls, DEL, Unicode's bidirectional embeddings, overrides, isolates and marks, line
// and paragraph separators, zero-width characters, noncharacters) are written visibly as `\u202e`
// (`\U0001fffe` beyond U+FFFF), and a byte that is not UTF-8 as `\xff`. Every other character is
// kept, so plain names read as they are.
#pragma once

#include <string>
#include <string_view>

namespace mqa::reports {

// For Markdown (summary.md, certificate.md, the diff): one line (a line break becomes a space);
// HTML's specials as entities (& < >: no tag can open, so quotes stay as they are); the Markdown
// characters that start emphasis, code, links, tables or strike-through (\ ` * _ [ ] | ~) escaped
// with a backslash. Not for inside a code span, where backslashes and entities are literal.
std::string markdown_text(std::string_view text);

// For HTML and XML (report.html, report.xml), inside elements and attribute values: & < > " ' as
// entities; line breaks and tabs kept (an error's lines in a <pre>).
std::string escape_markup(std::string_view text);

// For a terminal (the lines `run --kernel` and `check` print): no markup, line breaks and tabs
// kept, every other control (an escape sequence's ESC, a bell) and bidi character written visibly,
// so an adapter's text cannot recolour, move the cursor or reorder what the user reads.
std::string terminal_text(std::string_view text);
// The same for one line of a terminal (a table's cell, a line that names a case): line breaks and
// tabs shown too (`\u000a`), so the text cannot break the line or its columns.
std::string terminal_line(std::string_view text);

}  // namespace mqa::reports
