// Every one of the 2^32 float32 inputs, for every format, under the ml_dtypes profile, against
// the separate oracle in oracle/nearest_code.hpp. Hidden tier, in its own binary:
// `mqa_exhaustive "[exhaustive]"` (CI runs it in the Release build; about 40 s per format on one
// core).
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <bit>
#include <cstdint>
#include <future>
#include <vector>

#include "oracle/nearest_code.hpp"
#include "reference/fp8.hpp"
#include "support/paths.hpp"
#include "validator/io/npy.hpp"

namespace {

struct sweep_result {
  std::uint64_t checked = 0, mismatches = 0;
  std::string first;
};

sweep_result sweep(mqa::fp8::format f) {
  const auto& t = mqa::fp8::traits(f);
  const auto golden = mqa::io::read_npy<std::uint32_t>(
      mqa::test::golden_fp8_dir() / fmt::format("ml_dtypes.{}.decode_f32bits.npy", t.name));
  mqa::oracle::nearest_code oracle(std::string(t.name), std::vector<std::uint32_t>(golden.begin(), golden.end()));
  const mqa::fp8::conversion c{f, mqa::fp8::profile_id::ml_dtypes, std::nullopt};

  sweep_result r;
  auto check = [&](std::uint32_t bits, unsigned expected) {
    ++r.checked;
    const unsigned got = mqa::fp8::encode(c, std::bit_cast<float>(bits));
    if (got != expected && r.mismatches++ == 0)
      r.first = fmt::format("{}: input 0x{:08X} ({}) expected 0x{:02X} got 0x{:02X}", t.name, bits,
                            std::bit_cast<float>(bits), expected, got);
  };
  check(0x00000000u, oracle.zero(false));
  check(0x80000000u, oracle.zero(true));
  for (std::uint32_t bits = 1; bits < 0x7F800000u; ++bits) {  // positive finite, ascending
    const unsigned positive = oracle.positive(std::bit_cast<float>(bits));
    check(bits, positive);
    check(bits | 0x80000000u, oracle.negative_of(positive));
  }
  check(0x7F800000u, oracle.infinity(false));
  check(0xFF800000u, oracle.infinity(true));
  for (std::uint32_t bits = 0x7F800001u; bits <= 0x7FFFFFFFu; ++bits) {
    check(bits, oracle.nan(false));
    check(bits | 0x80000000u, oracle.nan(true));
  }
  return r;
}

}  // namespace

TEST_CASE("every float32 encodes as the nearest-value oracle says, in every format", "[.][exhaustive][fp8]") {
  std::vector<std::future<sweep_result>> runs;
  // The 8-bit formats: their ml_dtypes decode tables are golden files. e2m1fn's 16 codes are
  // checked near every midpoint in e2m1_test.cpp and against tests/data/golden/fp4.
  std::vector<std::string_view> names;
  for (const auto& t : mqa::fp8::kFormats) {
    if (t.bits != 8) continue;
    names.push_back(t.name);
    runs.push_back(std::async(std::launch::async, sweep, t.id));
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const sweep_result r = runs[i].get();
    CAPTURE(names[i], r.first);
    CHECK(r.checked == (std::uint64_t{1} << 32));
    CHECK(r.mismatches == 0);
  }
}
