// The gfx942 recasts (reference/fp8/profile.cpp, recast rows), code by code: for every one of the
// 256 e4m3fn codes, the code a producer writes times its compensating factor against the OCP value.
// The values come from decoders written here from the two formats' definitions (sign, 4 exponent
// bits, 3 mantissa bits; bias 7 with NaN at S.1111.111, bias 8 with NaN at 0x80 alone), sharing no
// code with reference/fp8.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include "reference/fp8/convert.hpp"
#include "reference/fp8/profile.hpp"

using namespace mqa::fp8;

namespace {

constexpr double kOracleNaN = std::numeric_limits<double>::quiet_NaN();

// value = (-1)^s x 2^(e - bias) x (1 + m/8), or 2^(1 - bias) x m/8 where e = 0.
double oracle_e4m3(unsigned byte, int bias) {
  const double sign = (byte & 0x80) ? -1.0 : 1.0;
  const int e = static_cast<int>((byte >> 3) & 0xF);
  const double m = byte & 0x7;
  return e == 0 ? sign * std::ldexp(m / 8, 1 - bias) : sign * std::ldexp(1 + m / 8, e - bias);
}
double oracle_e4m3fn(unsigned byte) { return (byte & 0x7F) == 0x7F ? kOracleNaN : oracle_e4m3(byte, 7); }
double oracle_e4m3fnuz(unsigned byte) { return byte == 0x80 ? kOracleNaN : oracle_e4m3(byte, 8); }

// Equal as values: NaN to NaN, and -0 to +0 (a zero's sign multiplies nothing in a dot product).
bool same_recast_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// What each producer's recast does not keep: the OCP code, and what code x factor is there instead.
// Every other code's value survives.
const std::map<std::string_view, std::map<unsigned, double>> kRecastNotKept{
    {"aiter-triton", {}},
    {"flydsl", {{0x7F, 480.0}, {0xFF, -480.0}}},
    {"vllm-normalize", {{0x7F, 480.0}, {0xFF, -480.0}}},
};

}  // namespace

TEST_CASE("every recast row is one producer, reachable by its id", "[fp8][recast]") {
  std::set<std::string_view> names;
  for (const recast& r : all_recasts()) {
    CAPTURE(r.name);
    CHECK(names.insert(r.name).second);
    CHECK(&rules(r.id) == &r);
    CHECK_FALSE(r.source.empty());
    CHECK(kRecastNotKept.contains(r.name));  // a new row needs its line in kRecastNotKept
  }
  CHECK(names.size() == kRecastNotKept.size());
}

TEST_CASE("the factor of an e4m3fn -> e4m3fnuz recast is a byte's OCP value over its fnuz value", "[fp8][recast]") {
  for (const recast& r : all_recasts()) {
    CAPTURE(r.name);
    for (unsigned byte : {0x01u, 0x38u, 0x7Eu, 0x81u, 0xB8u}) CHECK(recast_factor(r) == oracle_e4m3fn(byte) / oracle_e4m3fnuz(byte));
  }
}

TEST_CASE("every e4m3fn code: the recast code times its factor is the OCP value, but where listed", "[fp8][recast]") {
  for (const recast& r : all_recasts()) {
    REQUIRE(r.from == format::e4m3fn);
    REQUIRE(r.to == format::e4m3fnuz);
    const double factor = oracle_e4m3fn(0x38) / oracle_e4m3fnuz(0x38);  // 1.0 over 0.5
    const auto& not_kept = kRecastNotKept.at(r.name);
    for (unsigned code = 0; code < 256; ++code) {
      const std::uint8_t written = recast_code(r, static_cast<std::uint8_t>(code));
      const double ocp = oracle_e4m3fn(code), after = oracle_e4m3fnuz(written) * factor;
      CAPTURE(r.name, code, written, ocp, after);
      if (const auto x = not_kept.find(code); x != not_kept.end()) {
        CHECK_FALSE(same_recast_value(ocp, after));
        CHECK(same_recast_value(after, x->second));
      } else {
        CHECK(same_recast_value(ocp, after));
      }
    }
  }
}

// The bytes behind the values: halving moves every finite nonzero e4m3fn value onto the fnuz code
// with the same bits, so the two methods differ only at -0 and the NaN codes.
TEST_CASE("every recast keeps the byte of every finite nonzero code and writes no NaN for -0", "[fp8][recast]") {
  for (const recast& r : all_recasts()) {
    for (unsigned code = 0; code < 256; ++code) {
      const std::uint8_t written = recast_code(r, static_cast<std::uint8_t>(code));
      CAPTURE(r.name, code, written);
      const double ocp = oracle_e4m3fn(code);
      if (ocp != 0 && !std::isnan(ocp)) CHECK(written == code);
    }
    CHECK(recast_code(r, 0x00) == 0x00);
    CHECK(recast_code(r, 0x80) == 0x00);
  }
  // By value, a NaN is fnuz's one NaN whatever its sign; by bytes it stays a +-240 byte.
  CHECK(recast_code(rules(recast_id::aiter_triton), 0x7F) == 0x80);
  CHECK(recast_code(rules(recast_id::aiter_triton), 0xFF) == 0x80);
  CHECK(recast_code(rules(recast_id::flydsl), 0x7F) == 0x7F);
  CHECK(recast_code(rules(recast_id::flydsl), 0xFF) == 0xFF);
}
