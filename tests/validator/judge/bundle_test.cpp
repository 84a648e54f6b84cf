// A bundle's references computed for a judge that keeps them (judged_references): what each step
// took is reported, and a step not taken reports nothing: the proof only where no digest proves
// reference.npy, the centre only under a modelled contract. Where the engines compute on a GPU,
// every row's references come from one call each, bit for bit what the block-wise computation
// gives, and reference.npy is still proven where no digest proves it. What they hold is within the
// bound known before computing them.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

#include "kernels/contract.hpp"
#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "reference/operation.hpp"
#include "support/input_error_of.hpp"
#include "support/one_case.hpp"
#include "support/scratch_dir.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/bundle.hpp"

using namespace mqa;

namespace {

// A stand-in for the GPU engine: the CPU's computation, counting the calls made of it; it says it
// computes every reference and the sm90-wgmma centre on a device.
struct device_engines {
  int calls = 0;
  operation::engines engines() {
    return {[this](const exact::problem& p, const exact::options& o) {
              ++calls;
              return exact::compute(p, o);
            },
            {},
            [](const exact::problem&, const exact::options& o) {
              return o.dot_model == nullptr || o.dot_model == &mma::sm90_wgmma();
            },
            {}};
  }
};

bool same_bits(const exact::result& a, const exact::result& b) {
  const auto bits = [](const auto& x, const auto& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0;
  };
  return a.rows == b.rows && bits(a.logits, b.logits) && bits(a.magnitude, b.magnitude);
}

}  // namespace

TEST_CASE("computing a bundle's references says what each step took", "[judge]") {
  test::scratch_dir dir("judged-references");
  // Two blocks of judge_in_blocks' rows (504 rows of 520 keys a block); keys with NaN codes, or none.
  const std::string nan_keys = GENERATE(std::string(), std::string("special = [\"nan\"]\nspecial_count = 3\nspecial_in = \"k\"\n"));
  const cases::suite s = test::parse_one_case(
      {.suite = "references", .name = "causal", .m = 520, .n = 520, .heads = 4, .head_dim = 32,
       .keys = nan_keys + R"(layout = { kind = "causal" })"});
  bundle::write_bundle(bundle::make_bundle(s.cases[0], s.name), dir.root / "b");
  const auto use = GENERATE(bundle::digest_use::verify, bundle::digest_use::trust);
  const auto dot = GENERATE(bounds::dot_accumulator::fp32, bounds::dot_accumulator::sm90_wgmma);
  const bundle::bundle_inputs b = bundle::load_bundle_inputs(dir.root / "b", use);
  const exact::problem p = inputs::problem_of(b.spec, b.inputs);
  kernels::contract c = kernels::declared_arithmetic(dot);
  c.relu = GENERATE(exact::relu_rule::fmax, exact::relu_rule::keeps_nan);
  CAPTURE(b.trusted, bounds::traits(dot).name, c.relu == exact::relu_rule::fmax, nan_keys);
  REQUIRE(b.trusted == (use == bundle::digest_use::trust));

  const judge::references r = judge::judged_references(b, p, nullptr, c, 1);
  CHECK(r.spent.read > 0);
  CHECK((r.spent.proof > 0) == !b.trusted);
  // The proof's keeps-NaN reference is the judged one under the keeps-NaN rule.
  CHECK((r.spent.reference > 0) == (b.trusted || c.relu != exact::relu_rule::keeps_nan));
  CHECK((r.spent.centre > 0) == (r.centre.has_value()));
  CHECK(r.centre.has_value() == (dot == bounds::dot_accumulator::sm90_wgmma));
  // The bound a judge asks before computing them (will they fit in its store?) holds.
  CHECK(judge::estimated_bytes(b, p, nullptr, c) >= judge::bytes_of(r));

  SECTION("where a GPU computes them, every row's come from one call each, bit for bit the blocks'") {
    device_engines device;
    const judge::references whole = judge::judged_references(b, p, nullptr, c, 1, device.engines());
    CHECK(same_bits(whole.judged, r.judged));
    CHECK(judge::estimated_bytes(b, p, nullptr, c, device.engines()) >= judge::bytes_of(whole));
    REQUIRE(whole.centre.has_value() == r.centre.has_value());
    if (whole.centre) CHECK(same_bits(*whole.centre, *r.centre));
    // The reference; the keeps-NaN one that proves reference.npy where no digest does, the relu
    // rule differs and a NaN code can make the rules differ (exact::relu_rule_matters); the centre
    // of a modelled contract.
    const bool proven_apart = !b.trusted && c.relu != exact::relu_rule::keeps_nan && !nan_keys.empty();
    CHECK(device.calls == 1 + (proven_apart ? 1 : 0) + (whole.centre ? 1 : 0));
    // reference.npy is read only to be proven.
    CHECK((whole.spent.read > 0) == !b.trusted);
    CHECK((whole.spent.proof > 0) == !b.trusted);
    CHECK(whole.spent.gather == 0);
  }
}

TEST_CASE("where a GPU computes the references, a reference.npy no digest proves is still proven", "[judge]") {
  test::scratch_dir dir("judged-references-proof");
  const cases::suite s = test::parse_one_case(
      {.suite = "references", .name = "causal", .m = 16, .n = 64, .heads = 4, .head_dim = 32,
       .keys = R"(layout = { kind = "causal" })"});
  const bundle::bundle made = bundle::make_bundle(s.cases[0], s.name);
  const std::filesystem::path out = dir.root / "b";
  bundle::write_bundle(made, out);
  std::string bytes = test::read_text(out / "reference.npy");
  // The last finite reference value, one bit changed: the file stays a valid .npy.
  std::size_t x = made.reference.size();
  while (x-- > 0 && !std::isfinite(made.reference[x])) {}
  REQUIRE(x < made.reference.size());
  const std::size_t at = bytes.size() - 4 * (made.reference.size() - x);
  bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
  std::ofstream(out / "reference.npy", std::ios::binary | std::ios::trunc) << bytes;
  const bundle::bundle_inputs b = bundle::load_bundle_inputs(out, bundle::digest_use::ignore);
  REQUIRE_FALSE(b.trusted);
  const exact::problem p = inputs::problem_of(b.spec, b.inputs);
  kernels::contract c = kernels::declared_arithmetic(bounds::dot_accumulator::fp32);
  c.relu = GENERATE(exact::relu_rule::fmax, exact::relu_rule::keeps_nan);
  device_engines device;
  CHECK_THAT(test::input_error_of([&] { judge::judged_references(b, p, nullptr, c, 1, device.engines()); }),
             Catch::StartsWith(out.string() + "/reference.npy: element (" + std::to_string(x / 64) + ", " +
                               std::to_string(x % 64) + ") differs from the exact reference") &&
                 Catch::Contains("modified or mixed up"));
}
