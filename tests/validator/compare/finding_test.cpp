// Finding classes keep their names: reports, CI gates, --must-produce and --finding key on them.
#include <catch2/catch.hpp>

#include "support/name_tables.hpp"
#include "validator/compare/finding.hpp"

using namespace mqa::compare;

TEST_CASE("every finding class has its stable name", "[compare][names]") {
  mqa::test::check_name_table(kFindingClassNames,
                              "mask-leak, mask-hole, mask-shift, nan, inf, error-bound, scale-factor, topk-mismatch, "
                              "unwritten, nondeterministic, out-of-bounds, topk-duplicate, topk-outside-window, topk-padding, "
                              "topk-inadmissible, topk-unsorted");
  for (std::size_t i = 0; i < kFindingClasses; ++i) CHECK(kFindingClassNames[i].id == static_cast<finding_class>(i));
  CHECK(to_string(finding_class::topk_mismatch) == "topk-mismatch");
}
