// Adapter text made valid UTF-8 and cut between characters: the bytes an adapter can send that
// would make a report writer refuse the whole report.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>

#include "kernels/external/text.hpp"

using namespace mqa::external;

namespace {

// What the report writers need: nlohmann::json's dump throws on invalid UTF-8.
bool dumps(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

}  // namespace

TEST_CASE("well-formed UTF-8 sequences and the bytes that start none", "[external][text]") {
  CHECK(utf8_sequence("a") == 1);
  CHECK(utf8_sequence("\xC3\xA9") == 2);          // é
  CHECK(utf8_sequence("\xE2\x82\xAC") == 3);      // €
  CHECK(utf8_sequence("\xF0\x9F\x98\x80") == 4);  // U+1F600
  CHECK(utf8_sequence("") == 0);
  CHECK(utf8_sequence("\xFF") == 0);
  CHECK(utf8_sequence("\x80") == 0);              // a continuation byte alone
  CHECK(utf8_sequence("\xC0\xAF") == 0);          // overlong '/'
  CHECK(utf8_sequence("\xE0\x80\xAF") == 0);      // overlong, three bytes
  CHECK(utf8_sequence("\xED\xA0\x80") == 0);      // a surrogate, U+D800
  CHECK(utf8_sequence("\xF4\x90\x80\x80") == 0);  // past U+10FFFF
  CHECK(utf8_sequence("\xE2\x82") == 0);          // cut short
}

TEST_CASE("invalid bytes are shown as \\xNN; valid text is unchanged", "[external][text]") {
  CHECK(valid_utf8("plain ascii\n") == "plain ascii\n");
  CHECK(valid_utf8("d\xC3\xA9j\xC3\xA0 vu \xE2\x82\xAC") == "d\xC3\xA9j\xC3\xA0 vu \xE2\x82\xAC");
  CHECK(valid_utf8("bad \xFF byte") == "bad \\xFF byte");
  CHECK(valid_utf8("half \xE2\x82") == "half \\xE2\\x82");
  CHECK(valid_utf8("\xED\xA0\x80") == "\\xED\\xA0\\x80");
  CHECK(valid_utf8("\xC3\xA9\x80\xC3\xA9") == "\xC3\xA9\\x80\xC3\xA9");
  for (int b = 0; b < 256; ++b) {
    const std::string s = std::string("x").append(1, static_cast<char>(b)).append("\xE2\x82");
    CAPTURE(b);
    CHECK(dumps(valid_utf8(s)));
  }
}

TEST_CASE("a cut never ends inside a character", "[external][text]") {
  const std::string euros = "\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC";  // three 3-byte characters
  CHECK(cut_utf8(euros, 9) == euros);
  CHECK(cut_utf8(euros, 100) == euros);
  CHECK(cut_utf8(euros, 8) == euros.substr(0, 6));
  CHECK(cut_utf8(euros, 7) == euros.substr(0, 6));
  CHECK(cut_utf8(euros, 6) == euros.substr(0, 6));
  CHECK(cut_utf8(euros, 2).empty());
  CHECK(cut_utf8("ab\xFF\xFF", 3) == "ab\xFF");  // a stray byte is a character of its own
  for (std::size_t n = 0; n <= euros.size(); ++n) CHECK(dumps(std::string(cut_utf8(euros, n))));
}
