// Text from elsewhere in reports (reports/escape.hpp): no markup, no reordering, nothing hidden.
#include <catch2/catch.hpp>

#include "reports/escape.hpp"

using namespace mqa;

namespace {
const std::string kHostile = "<img src=x onerror=alert(1)> *b* _i_ `c` [l](u) a|b ~~s~~ \\ \xe2\x80\xae"
                             "evil\xe2\x81\xa6x\xe2\x81\xa9\x07\x1b[31m\n# h\xff";
}

TEST_CASE("Markdown: specials escaped, controls and bidi shown, one line", "[reports][escape]") {
  CHECK(reports::markdown_text("numpy-einsum 1.24.2 (a: b)") == "numpy-einsum 1.24.2 (a: b)");
  CHECK(reports::markdown_text(kHostile) ==
        "&lt;img src=x onerror=alert(1)&gt; \\*b\\* \\_i\\_ \\`c\\` \\[l\\](u) a\\|b \\~\\~s\\~\\~ \\\\ \\\\u202e"
        "evil\\\\u2066x\\\\u2069\\\\u0007\\\\u001b\\[31m # h\\\\xff");
  // Every bidi control of Unicode's list, and the C1 controls.
  for (const char* c : {"\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad", "\xe2\x80\xae", "\xe2\x81\xa6",
                        "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9", "\xc2\x85", "\x7f"}) {
    CAPTURE(c);
    const std::string shown = reports::markdown_text(c);
    CHECK(shown.rfind("\\\\u", 0) == 0);
    CHECK(shown.size() == 7);
  }
  // Other characters beyond ASCII are kept; an overlong or truncated sequence is bytes.
  CHECK(reports::markdown_text("\xc3\xa9t\xc3\xa9 \xe6\x97\xa5") == "\xc3\xa9t\xc3\xa9 \xe6\x97\xa5");
  CHECK(reports::markdown_text("\xc0\xaf\xe2\x80") == "\\\\xc0\\\\xaf\\\\xe2\\\\x80");
}

TEST_CASE("HTML and XML: entities, controls and bidi shown, lines kept", "[reports][escape]") {
  CHECK(reports::escape_markup("<b>&\"x'") == "&lt;b&gt;&amp;&quot;x&#39;");
  CHECK(reports::escape_markup("a\n\tb \xe2\x80\xae\x01\xff") == "a\n\tb \\u202e\\u0001\\xff");
  // Noncharacters, which XML 1.0 does not admit (U+FFFE, U+FFFF) or which mean nothing in a text:
  // shown, beyond U+FFFF with eight digits; their neighbours kept.
  CHECK(reports::escape_markup("\xef\xbf\xbe\xef\xbf\xbf\xef\xb7\x90\xef\xb7\xaf\xf0\x9f\xbf\xbe\xf4\x8f\xbf\xbf") ==
        "\\ufffe\\uffff\\ufdd0\\ufdef\\U0001fffe\\U0010ffff");
  CHECK(reports::escape_markup("\xef\xbf\xbd\xef\xb7\x8f\xef\xb7\xb0\xf0\x9f\xbf\xbd") ==
        "\xef\xbf\xbd\xef\xb7\x8f\xef\xb7\xb0\xf0\x9f\xbf\xbd");
  CHECK(reports::markdown_text("\xef\xbf\xbf") == "\\\\uffff");
}

TEST_CASE("terminal: no markup, lines kept, escape sequences and bidi shown", "[reports][escape]") {
  CHECK(reports::terminal_text("<b> *k* a|b") == "<b> *k* a|b");
  CHECK(reports::terminal_text("a\n\tb \xe2\x80\xae\x1b[31mred\x07\xff") == "a\n\tb \\u202e\\u001b[31mred\\u0007\\xff");
}

TEST_CASE("a terminal line: line breaks and tabs shown too, so no cell breaks its table", "[reports][escape]") {
  CHECK(reports::terminal_line("case <a> | b") == "case <a> | b");
  CHECK(reports::terminal_line("a\nb\tc\rd \x1b[31m\xe2\x80\xae\xef\xbf\xbf") ==
        "a\\u000ab\\u0009c\\u000dd \\u001b[31m\\u202e\\uffff");
}
