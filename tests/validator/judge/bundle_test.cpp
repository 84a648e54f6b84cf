// A bundle's references computed for a judge that keeps them (judged_references): what each step
// took is reported, and a step not taken reports nothing: the proof only where no digest proves
// reference.npy, the centre only under a modelled contract.
#include <catch2/catch.hpp>

#include "kernels/contract.hpp"
#include "reference/bounds/accumulators.hpp"
#include "support/one_case.hpp"
#include "support/scratch_dir.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/bundle.hpp"

using namespace mqa;

TEST_CASE("computing a bundle's references says what each step took", "[judge]") {
  test::scratch_dir dir("judged-references");
  const cases::suite s = test::parse_one_case(
      {.suite = "references", .name = "causal", .m = 24, .n = 96, .heads = 4, .head_dim = 32,
       .keys = R"(layout = { kind = "causal" })"});
  bundle::write_bundle(bundle::make_bundle(s.cases[0], s.name), dir.root / "b");
  const auto use = GENERATE(bundle::digest_use::verify, bundle::digest_use::trust);
  const auto dot = GENERATE(bounds::dot_accumulator::fp32, bounds::dot_accumulator::sm90_wgmma);
  const bundle::bundle_inputs b = bundle::load_bundle_inputs(dir.root / "b", use);
  const exact::problem p = inputs::problem_of(b.spec, b.inputs);
  kernels::contract c = kernels::declared_arithmetic(dot);
  c.relu = GENERATE(exact::relu_rule::fmax, exact::relu_rule::keeps_nan);
  CAPTURE(b.trusted, bounds::traits(dot).name, c.relu == exact::relu_rule::fmax);
  REQUIRE(b.trusted == (use == bundle::digest_use::trust));

  const judge::references r = judge::judged_references(b, p, nullptr, c, 1);
  CHECK(r.spent.read > 0);
  CHECK((r.spent.proof > 0) == !b.trusted);
  // The proof's keeps-NaN reference is the judged one under the keeps-NaN rule.
  CHECK((r.spent.reference > 0) == (b.trusted || c.relu != exact::relu_rule::keeps_nan));
  CHECK((r.spent.centre > 0) == (r.centre.has_value()));
  CHECK(r.centre.has_value() == (dot == bounds::dot_accumulator::sm90_wgmma));
}
