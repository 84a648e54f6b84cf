// The one enum <-> name helper (reference/names/names.hpp) and the tables of reference/: each name the
// command line, case files and reports use reads back both ways, and the "accepted:" lists of the
// error messages stay as they were.
#include <catch2/catch.hpp>

#include "reference/bounds/accumulators.hpp"
#include "reference/exact/logits.hpp"
#include "reference/fp8/format.hpp"
#include "reference/fp8/profile.hpp"
#include "reference/names/names.hpp"
#include "support/name_tables.hpp"

using namespace mqa;

namespace {
enum class colour : unsigned char { red, green, blue };
constexpr names::table<colour, 2> kColours{{{colour::red, "red"}, {colour::green, "green"}}};
}  // namespace

TEST_CASE("a name table reads both ways, exactly, and lists what it accepts", "[names]") {
  STATIC_REQUIRE(names::name_of(kColours, colour::green) == "green");
  STATIC_REQUIRE(names::parse(kColours, "red") == colour::red);
  CHECK(names::name_of(kColours, colour::blue) == "?");  // a value the table lacks
  CHECK_FALSE(names::parse(kColours, "Red"));
  CHECK_FALSE(names::parse(kColours, "blue"));
  CHECK(names::accepted(kColours) == "red, green");
  CHECK(names::accepted(names::table<colour, 0>{}).empty());
}

TEST_CASE("the declared-arithmetic names", "[names][bounds]") {
  // The accumulators' list grows with their rows (tests/validator/cli pins the message).
  test::check_name_table(bounds::dot_accumulators(), names::accepted(bounds::dot_accumulators()));
  test::check_name_table(bounds::kHeadAccumulatorNames, "exact, fp32");
  test::check_name_table(bounds::kScalePlacementNames, "after-head-sum, before-relu, into-weights, into-keys-bf16");
  test::check_name_table(bounds::kWeightPrecisionNames, "fp32, bf16, fp16");
  test::check_name_table(bounds::kLogitsPrecisionNames, "fp32, bf16");
  CHECK(bounds::to_string(bounds::scale_placement::into_keys_bf16) == "into-keys-bf16");
  CHECK(bounds::to_string(bounds::dot_accumulator::fp22_truncated) == "fp22-truncated");
}

TEST_CASE("the exact reference's names", "[names][exact]") {
  test::check_name_table(exact::kReluRuleNames, "keeps-nan, fmax");
  test::check_name_table(exact::kDotEngineNames, "automatic, float64-gemm, int128, int8-residues");
  CHECK(exact::to_string(exact::relu_rule::fmax) == "fmax");
  CHECK(exact::to_string(exact::dot_engine::int8_residues) == "int8-residues");
}

TEST_CASE("the fp8 formats' and profiles' names are their rows'", "[names][fp8]") {
  test::check_name_table(fp8::kFormats, "e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e4m3b11fnuz, e8m0fnu, e2m1fn");
  test::check_name_table(fp8::all_profiles(),
                         "ml_dtypes, torch, cuda-satfinite, cuda-nosat, hip-satfinite, hip-nosat, saturate, deepgemm");
  CHECK(fp8::format_names() == names::accepted(fp8::kFormats));
  CHECK(fp8::profile_names() == names::accepted(fp8::all_profiles()));
  CHECK(fp8::parse_format("e5m2fnuz") == fp8::format::e5m2fnuz);
  CHECK(fp8::parse_profile("hip-nosat") == fp8::profile_id::hip_nosat);
  CHECK(fp8::to_string(fp8::code_class::subnormal) == "subnormal");
  CHECK(fp8::to_string(fp8::code_class::inf) == "inf");
}
