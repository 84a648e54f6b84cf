#include "validator/pieces.hpp"

#include <catch2/catch.hpp>
#include <atomic>
#include <stdexcept>
#include <vector>

namespace mqa {
namespace {

TEST_CASE("for_each_piece does every piece once, on however many threads", "[pieces]") {
  const std::int64_t pieces = GENERATE(std::int64_t{0}, std::int64_t{1}, std::int64_t{2}, std::int64_t{1000});
  CAPTURE(pieces);
  std::vector<std::atomic<int>> done(static_cast<std::size_t>(pieces));
  for_each_piece(pieces, [&](std::int64_t piece) { ++done[static_cast<std::size_t>(piece)]; });
  for (const auto& d : done) CHECK(d == 1);
}

TEST_CASE("for_each_piece rethrows a piece's exception once every thread has stopped", "[pieces]") {
  std::atomic<int> running{0};
  auto fails = [&] {
    for_each_piece(1000, [&](std::int64_t piece) {
      ++running;
      if (piece == 17) {
        --running;
        throw std::runtime_error("piece 17");
      }
      --running;
    });
  };
  CHECK_THROWS_WITH(fails(), "piece 17");
  CHECK(running == 0);  // no piece still running when the exception arrived
}

}  // namespace
}  // namespace mqa
