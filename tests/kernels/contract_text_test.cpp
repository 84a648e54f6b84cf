// A report's contract line read back (kernels/contract_text.hpp): every line describe() writes,
// and nothing else.
#include <catch2/catch.hpp>

#include "kernels/contract_text.hpp"
#include "kernels/cpu/registry.hpp"

using namespace mqa::kernels;

TEST_CASE("every built-in variant's contract line reads back as the contract", "[kernels][names]") {
  for (const auto& v : cpu::cpu_variants()) {
    INFO(v.name);
    const auto back = parse_contract(describe(v.declared));
    REQUIRE(back);
    CHECK(describe(back->declared) == describe(v.declared));
    CHECK(back->declared.dot == v.declared.dot);
    CHECK(back->declared.promote_every == v.declared.promote_every);
    CHECK_FALSE(back->mask_from_cases);
  }
}

TEST_CASE("a contract line with every option reads back", "[kernels][names]") {
  contract c = declared_arithmetic(dot_accumulator::sm90_wgmma, mqa::exact::relu_rule::fmax);
  c.promote_every = 32;
  c.logits = logits_precision::bf16;
  c.columns = columns_layout::relative;
  c.mask = masking::dont_care;
  c.scale = scale_placement::before_relu;
  c.weights = weight_precision::bf16;
  c.deterministic = false;
  const auto back = parse_contract(describe(c));
  REQUIRE(back);
  CHECK(describe(back->declared) == describe(c));
  CHECK_FALSE(back->declared.deterministic);
  CHECK(back->declared.relu == mqa::exact::relu_rule::fmax);
}

TEST_CASE("run --kernel's line with masking left to the cases reads back", "[kernels][names]") {
  const contract c = declared_arithmetic(dot_accumulator::fp32);
  const auto back = parse_contract(describe(c) + std::string(kMaskFromCasesNote));
  REQUIRE(back);
  CHECK(back->mask_from_cases);
  CHECK(describe(back->declared) == describe(c));
}

TEST_CASE("a line describe() does not write is not a contract", "[kernels][names]") {
  for (const char* line : {"", "dot fp64, heads fp32, k_scale after-head-sum, weights fp32, relu keeps NaN, clean",
                           "heads fp32, dot fp32, k_scale after-head-sum, weights fp32, relu keeps NaN, clean",
                           "dot fp32 promoted every 0, heads fp32, k_scale after-head-sum, weights fp32, relu keeps NaN, clean",
                           "dot fp32, heads fp32, k_scale after-head-sum, weights fp32, relu keeps NaN, clean, deterministic, x"}) {
    INFO(line);
    CHECK_FALSE(parse_contract(line));
  }
}
