// The spelling of every enumerated case key reads back both ways (validator/case/case.hpp's tables),
// and the "accepted:" lists the case errors print stay as they were.
#include <catch2/catch.hpp>

#include "support/name_tables.hpp"
#include "validator/case/case.hpp"

using namespace mqa::cases;
using mqa::test::check_name_table;

TEST_CASE("every enumerated case key's names", "[case][names]") {
  check_name_table(kScaleKindNames, "fp32, ue8m0");
  check_name_table(kDistributionNames, "normal, uniform, outliers, near-ties");
  check_name_table(kSpecialValueNames, "subnormal, largest, negative-underflow, nan, zero-k-scale, negative-k-scale");
  check_name_table(kSpecialTargetNames, "q, k, both");
  check_name_table(kLayoutKindNames, "causal, packed, context-parallel, sliding, compressed, random, explicit, paged");
  check_name_table(kPagedFillNames, "shuffled, shared-prefix, sequential");
  check_name_table(kUnusedEntryNames, "zero, minus-one, stale");
  CHECK(to_string(layout_kind::explicit_windows) == "explicit");
  CHECK(to_string(special_value::negative_k_scale) == "negative-k-scale");
  CHECK(to_string(unused_entry::minus_one) == "minus-one");
}
