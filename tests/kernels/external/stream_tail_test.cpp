// An adapter's stderr kept in memory: bounded however much it writes, with what came since a
// mark, cut at lines, always valid UTF-8.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>

#include "kernels/external/stream_tail.hpp"

using namespace mqa::external;

TEST_CASE("what came since a mark, trailing blank space removed", "[external][tail]") {
  stream_tail t(1000);
  t.append("an earlier case's line\n");
  const auto mark = t.mark();
  CHECK(t.since(mark, 2000).empty());
  t.append("Traceback (most recent call last):\n");
  t.append("ValueError: bad\n\n");
  CHECK(t.since(mark, 2000) == "Traceback (most recent call last):\nValueError: bad");
  CHECK(t.since(mark, 20) == "ValueError: bad");  // cut to whole lines
  CHECK(t.since(0, 2000) == "an earlier case's line\nTraceback (most recent call last):\nValueError: bad");
  CHECK(t.since(t.mark(), 2000).empty());
  CHECK(t.since(t.mark() + 5, 2000).empty());
  CHECK(t.dropped() == 0);
}

TEST_CASE("an endless stream is held within its bound", "[external][tail]") {
  stream_tail t(1 << 10);
  const auto mark = t.mark();
  const std::string line = "progress: another step of a long computation\n";
  for (int i = 0; i < 100000; ++i) t.append(line);
  t.append("RuntimeError: out of memory\n");
  CHECK(t.mark() == 100000 * line.size() + 28);
  CHECK(t.dropped() >= t.mark() - 2048);
  CHECK(t.dropped() <= t.mark() - 1024);
  const std::string tail = t.since(mark, 200);
  CHECK(tail.ends_with("\nRuntimeError: out of memory"));
  CHECK(tail.starts_with("progress: "));  // the partly dropped line is left out, not shown cut
  CHECK(tail.size() <= 200);
  // One append larger than the bound keeps its end.
  stream_tail big(16);
  big.append(std::string(100, 'x') + "\nlast words\n");
  CHECK(big.since(0, 100) == "last words");
}

TEST_CASE("the tail is valid UTF-8 and never starts inside a character", "[external][tail]") {
  stream_tail t(1000);
  t.append("bad byte \xFF here\n");
  CHECK(t.since(0, 2000) == "bad byte \\xFF here");
  std::string euros;
  for (int i = 0; i < 100; ++i) euros += "\xE2\x82\xAC";  // no newline: cut at a character
  stream_tail u(1000);
  u.append(euros);
  for (std::size_t max = 1; max < 20; ++max) {
    const std::string s = u.since(0, max);
    CAPTURE(max);
    CHECK(s.size() <= max);
    CHECK_NOTHROW(nlohmann::json(s).dump());
  }
  stream_tail v(1000);
  v.append(std::string(50, '\xFF'));  // every byte grows to four: still within max_bytes
  CHECK(v.since(0, 40).size() <= 40);
  CHECK_NOTHROW(nlohmann::json(v.since(0, 40)).dump());
}
