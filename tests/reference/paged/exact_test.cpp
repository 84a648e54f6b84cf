// The paged reference against its plain rational oracle, bit for bit, on every paged case of the
// quick suite, and the reference's own promises: rows on request,
// any thread count, an engine of the caller's, the same values as gathering by hand.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstring>

#include "oracle.hpp"
#include "reference/paged/exact.hpp"
#include "support/one_case.hpp"
#include "support/paged_case.hpp"
#include "support/paths.hpp"
#include "validator/case/load.hpp"
#include "validator/inputs/inputs.hpp"

using namespace mqa;

namespace {

std::uint32_t float_bits(float x) {
  std::uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The first element where the result and the oracle differ, in full.
std::optional<std::string> first_mismatch(const paged::problem& p, const exact::result& r, exact::relu_rule rule) {
  for (std::size_t x = 0; x < r.rows.size(); ++x)
    for (std::int64_t j = 0; j < p.max_context; ++j) {
      const float got = r.logits[x * static_cast<std::size_t>(p.max_context) + static_cast<std::size_t>(j)];
      const float want = paged_oracle::logit(p, r.rows[x], j, rule);
      if (float_bits(got) != float_bits(want) && !(std::isnan(got) && std::isnan(want)))
        return fmt::format("row {} key {}: reference {} ({:08X}), oracle {} ({:08X})", r.rows[x], j, got,
                           float_bits(got), want, float_bits(want));
    }
  return std::nullopt;
}

// Every paged case of a suite file against the oracle, each problem and its reference first held to
// `require` (a test's own premise): how many cases were paged.
template <class Require>
int check_paged_cases(const std::filesystem::path& suite_file, Require require) {
  int paged_cases = 0;
  for (const auto& c : cases::load_suite(suite_file).cases) {
    if (c.layout.kind != cases::layout_kind::paged) continue;
    ++paged_cases;
    CAPTURE(c.name);
    const inputs::tensors t = inputs::generate(c);
    const paged::problem p = inputs::paged_problem_of(c, t);
    const exact::result r = paged::compute(p);
    require(p, r);
    const auto mismatch = first_mismatch(p, r, exact::relu_rule::keeps_nan);
    INFO(mismatch.value_or(""));
    CHECK(!mismatch);
  }
  return paged_cases;
}

test::paged_case generate(const test::one_case& c) { return test::generate_paged(test::parse_one_case(c).cases.front()); }

}  // namespace

TEST_CASE("the paged reference matches its rational oracle on every paged case of the quick suite",
          "[paged][exact]") {
  const int paged_cases = check_paged_cases(test::source_dir() / "cases/quick.toml",
                                            [](const paged::problem& p, const exact::result& r) {
                                              REQUIRE(r.rows.size() == static_cast<std::size_t>(p.rows()));
                                            });
  CHECK(paged_cases >= 3);
}

TEST_CASE("the paged fp4 cache's reference matches the rational oracle", "[paged][exact][fp4]") {
  // e2m1fn keys packed two per byte with ue8m0 block scales in their pages, fp4 and fp8 q.
  const int paged_cases = check_paged_cases(test::source_dir() / "cases/bugs/29-fp4-block-scales.toml",
                                            [](const paged::problem& p, const exact::result&) {
                                              REQUIRE(p.k_format == fp8::format::e2m1fn);
                                            });
  CHECK(paged_cases == 2);
}

TEST_CASE("special values through the cache follow the prefill rules under both relu rules", "[paged][exact]") {
  const test::paged_case g = generate({.name = "specials", .m = 6, .n = 70, .heads = 3, .head_dim = 16, .keys = R"(seed = 9
special = ["nan", "negative-k-scale", "zero-k-scale", "subnormal"]
special_count = 6
layout = { kind = "paged", next_n = 2, block_kv = 8, fill = "shared-prefix", shared_blocks = 3, context_min = 20 })"});
  const paged::problem& p = g.problem;
  for (const auto rule : {exact::relu_rule::keeps_nan, exact::relu_rule::fmax}) {
    exact::options o;
    o.relu = rule;
    const auto mismatch = first_mismatch(p, paged::compute(p, o), rule);
    INFO(mismatch.value_or(""));
    CHECK(!mismatch);
  }
}

TEST_CASE("rows on request, any thread count and a caller's engine give the same bits", "[paged][exact]") {
  const test::paged_case g = generate({.name = "rows", .m = 12, .n = 90, .heads = 4, .head_dim = 8, .keys = R"(seed = 4
layout = { kind = "paged", next_n = 3, block_kv = 4, context_lens_2d = true, unused_entries = "minus-one" })"});
  const paged::problem& p = g.problem;
  exact::options one;
  one.threads = 1;
  const exact::result all = paged::compute(p, one);
  exact::options many;
  many.threads = 5;
  CHECK(paged::compute(p, many).logits == all.logits);
  int calls = 0;
  const exact::result engine = paged::compute(p, one, [&](const exact::problem& d, const exact::options& o) {
    ++calls;
    return exact::compute(d, o);
  });
  CHECK(calls > 0);
  CHECK(engine.logits == all.logits);
  CHECK(engine.magnitude == all.magnitude);
  exact::options some;
  some.rows = {1, 2, 7, 11};
  const exact::result subset = paged::compute(p, some);
  REQUIRE(subset.rows == some.rows);
  const auto width = static_cast<std::size_t>(p.max_context);
  for (std::size_t x = 0; x < subset.rows.size(); ++x)
    for (std::size_t j = 0; j < width; ++j) {
      CHECK(float_bits(subset.logits[x * width + j]) ==
            float_bits(all.logits[static_cast<std::size_t>(subset.rows[x]) * width + j]));
      CHECK(subset.magnitude[x * width + j] == all.magnitude[static_cast<std::size_t>(subset.rows[x]) * width + j]);
    }
  exact::options backwards;
  backwards.rows = {3, 2};
  CHECK_THROWS_WITH(paged::compute(p, backwards), Catch::Contains("strictly ascending"));
}
