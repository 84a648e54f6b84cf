// Which contract is weaker than another (validator/verdict/contract_change.hpp): ordered by the
// bound each derives, and by what each excuses.
#include <catch2/catch.hpp>

#include <vector>

#include "validator/verdict/contract_change.hpp"

using namespace mqa;
using kernels::contract;
using kernels::declared_arithmetic;
using kernels::dot_accumulator;

namespace {

const std::vector<verdict::judged_shape> kShapes{{.head_dim = 64, .heads = 8}, {.head_dim = 128, .heads = 64}};

bool weaker(const contract& baseline, const contract& now) {
  return verdict::contract_weakened(baseline, now, kShapes).has_value();
}

}  // namespace

TEST_CASE("a looser accumulator is weaker, a tighter one is not", "[verdict][contract]") {
  const contract exact = declared_arithmetic(dot_accumulator::exact), fp32 = declared_arithmetic(dot_accumulator::fp32),
                 bf16 = declared_arithmetic(dot_accumulator::bf16),
                 fp22 = declared_arithmetic(dot_accumulator::fp22_truncated);
  CHECK(weaker(fp32, bf16));
  CHECK(weaker(exact, fp32));
  CHECK(weaker(fp32, fp22));
  CHECK_FALSE(weaker(bf16, fp32));
  CHECK_FALSE(weaker(fp32, exact));
  CHECK_FALSE(weaker(fp32, fp32));
  const auto why = verdict::contract_weakened(fp32, bf16, kShapes);
  REQUIRE(why);
  CHECK(why->find("'dot fp32, heads fp32") == 0);
  CHECK(why->find("-> 'dot bf16, heads fp32") != std::string::npos);
  CHECK(why->find("a larger error bound") != std::string::npos);
}

TEST_CASE("precision lost elsewhere in the arithmetic is weaker", "[verdict][contract]") {
  const contract fp32 = declared_arithmetic(dot_accumulator::fp32);
  contract c = fp32;
  c.weights = kernels::weight_precision::bf16;
  CHECK(weaker(fp32, c));
  CHECK_FALSE(weaker(c, fp32));
  c = fp32;
  c.logits = kernels::logits_precision::bf16;
  CHECK(weaker(fp32, c));
}

TEST_CASE("what a contract excuses besides its bound is weaker", "[verdict][contract]") {
  const contract fp32 = declared_arithmetic(dot_accumulator::fp32);
  contract c = fp32;
  c.mask = kernels::masking::dont_care;
  CHECK(weaker(fp32, c));
  CHECK_FALSE(weaker(c, fp32));
  c = fp32;
  c.relu = exact::relu_rule::fmax;
  CHECK(weaker(fp32, c));
  c = fp32;
  c.deterministic = false;
  CHECK(weaker(fp32, c));
  c = fp32;
  c.scale = kernels::scale_placement::before_relu;
  CHECK(weaker(fp32, c));
  c = declared_arithmetic(dot_accumulator::sm90_wgmma);
  CHECK(weaker(fp32, c));  // another centre
  contract promoted = c;
  promoted.promote_every = 32;
  CHECK(weaker(c, promoted));
  CHECK_FALSE(weaker(c, c));
}

TEST_CASE("masking left to the cases is weaker than masking declared clean", "[verdict][contract]") {
  const kernels::contract_line clean{.declared = declared_arithmetic(dot_accumulator::fp32), .mask_from_cases = false};
  const kernels::contract_line per_case{.declared = clean.declared, .mask_from_cases = true};
  CHECK(verdict::contract_weakened(clean, per_case, kShapes));
  CHECK_FALSE(verdict::contract_weakened(per_case, clean, kShapes));
  CHECK_FALSE(verdict::contract_weakened(per_case, per_case, kShapes));
}
