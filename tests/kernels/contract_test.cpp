// What a variant declares: the contract's names (--mask, --columns) and the one-line description
// reports and `mqacheck variants` print.
#include <catch2/catch.hpp>

#include "kernels/contract.hpp"
#include "support/name_tables.hpp"

using namespace mqa::kernels;

TEST_CASE("the contract's names read both ways", "[kernels][names]") {
  mqa::test::check_name_table(kMaskingNames, "clean, dont-care");
  mqa::test::check_name_table(kColumnsLayoutNames, "absolute, relative");
  CHECK(to_string(masking::dont_care) == "dont-care");
}

TEST_CASE("a contract describes itself in one line", "[kernels]") {
  contract c = declared_arithmetic(dot_accumulator::exact);
  CHECK(c.heads == head_accumulator::exact);
  CHECK(describe(c) == "dot exact, heads exact, k_scale after-head-sum, weights fp32, relu keeps NaN, clean, deterministic");
  c = declared_arithmetic(dot_accumulator::sm90_wgmma, mqa::exact::relu_rule::fmax);
  c.promote_every = 32;
  c.logits = logits_precision::bf16;
  c.columns = columns_layout::relative;
  c.mask = masking::dont_care;
  CHECK(describe(c) == "dot sm90-wgmma promoted every 32, heads fp32, k_scale after-head-sum, weights fp32, logits bf16, "
                       "relu fmax, dont-care, columns relative, deterministic");
}
