// The suspicion note: an output that is the exact reference where the declared arithmetic rounds
// away from it is suspected; an honest output of the declared arithmetic is not, nor is anything
// under an `exact` contract. (Every honest CPU variant on the variants' problems is never
// suspected: tests/kernels/cpu/variants_test.cpp.)
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <stdexcept>

#include "kernels/contract.hpp"
#include "kernels/cpu/registry.hpp"
#include "reference/bounds/accumulators.hpp"
#include "validator/case/load.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/judge.hpp"
#include "validator/judge/references.hpp"
#include "validator/judge/suspicion.hpp"

using namespace mqa;

namespace {

const char* const kSuite = R"(
[suite]
name = "suspicion"
[[case]]
name = "wide"
m = 48
n = 160
heads = 8
head_dim = 128
layout = { kind = "random" }
)";

struct judged_case {
  cases::suite suite = cases::parse_suite(kSuite, "suspicion.toml");
  judged_case() = default;
  explicit judged_case(cases::suite s) : suite(std::move(s)) {}
  inputs::tensors t = inputs::generate(suite.cases[0]);
  exact::problem p = inputs::problem_of(suite.cases[0], t);
};

compare::judgement judge_output(const exact::problem& p, const kernels::contract& c, const exact::result& reference,
                                const exact::result* centre, std::vector<float>& output) {
  compare::subject s = compare::subject_of(p, nullptr, c, std::nullopt, {output.data(), p.m, p.n, p.n}, 1);
  s.reference = &reference;
  s.centre = centre;
  return judge::judge(s);
}

// The output of the first correct CPU model declaring `dot` (the honest kernel).
std::vector<float> honest_output(const exact::problem& p, bounds::dot_accumulator dot) {
  for (const auto& m : kernels::cpu::arithmetic_models()) {
    if (m.declared.dot != dot) continue;
    std::vector<float> out(static_cast<std::size_t>(p.m * p.n));
    kernels::cpu::run_model(m.config, p, {out.data(), p.m, p.n, p.n}, 0);
    return out;
  }
  FAIL("no model declares the accumulator");
  return {};
}

}  // namespace

TEST_CASE("the exact reference handed back under a rounding contract is suspected, never silently passed", "[judge]") {
  const judged_case k;
  const auto dot = GENERATE(bounds::dot_accumulator::fp32, bounds::dot_accumulator::sm90_wgmma);
  const kernels::contract c = kernels::declared_arithmetic(dot);
  CAPTURE(bounds::traits(dot).name);
  judge::reference_cache references(k.p, nullptr, {}, 1);
  const exact::result& reference = references.reference(c);
  const exact::result* centre = references.centre(c);

  SECTION("the reference itself: every element the declared arithmetic rounds away matches") {
    std::vector<float> output = reference.logits;
    const compare::judgement j = judge_output(k.p, c, reference, centre, output);
    // Under fp32 the answer passes (it is within any float32 bound); under the modelled contract it
    // also fails its bound, which is centred on the instruction's model. Suspected either way.
    CHECK(j.pass() == (dot == bounds::dot_accumulator::fp32));
    REQUIRE(j.suspected);
    CHECK(j.suspected->differing >= judge::kMinimumDiffering);
    CHECK(j.suspected->matched == j.suspected->differing);
    CHECK_THAT(judge::suspicion_note(*j.suspected), Catch::Contains("exact reference's bits on"));
  }
  SECTION("the honest kernel of the declared arithmetic passes unsuspected") {
    std::vector<float> output = honest_output(k.p, dot);
    const compare::judgement j = judge_output(k.p, c, reference, centre, output);
    CHECK(j.pass());
    CHECK_FALSE(j.suspected);
  }
  SECTION("a copy with 5% of those elements changed is still suspected; one with 20% changed is not") {
    std::vector<float> honest = honest_output(k.p, dot);
    const exact::result* witness_like = centre;  // where they differ from the reference, take the honest value
    const auto with_share = [&](double share) {
      std::vector<float> output = reference.logits;
      std::int64_t seen = 0, differing = 0;
      for (std::size_t x = 0; x < output.size(); ++x)
        differing += std::isfinite(reference.logits[x]) && std::bit_cast<std::uint32_t>(reference.logits[x]) !=
                                                               std::bit_cast<std::uint32_t>(honest[x]);
      for (std::size_t x = 0; x < output.size(); ++x) {
        if (!std::isfinite(reference.logits[x]) ||
            std::bit_cast<std::uint32_t>(reference.logits[x]) == std::bit_cast<std::uint32_t>(honest[x]))
          continue;
        if (static_cast<double>(seen++) < share * static_cast<double>(differing)) output[x] = honest[x];
      }
      return judge_output(k.p, c, reference, witness_like, output);
    };
    CHECK(with_share(0.05).suspected);
    CHECK_FALSE(with_share(0.2).suspected);
  }
}

TEST_CASE("an exact contract carries no suspicion: it must give the reference", "[judge]") {
  const judged_case k;
  const kernels::contract c = kernels::declared_arithmetic(bounds::dot_accumulator::exact);
  judge::reference_cache references(k.p, nullptr, {}, 1);
  const exact::result& reference = references.reference(c);
  std::vector<float> output = reference.logits;
  const compare::judgement j = judge_output(k.p, c, reference, nullptr, output);
  CHECK(j.pass());
  CHECK_FALSE(j.suspected);
}

// Taller than the witness samples: rows it never reads.
const char* const kTallSuite = R"(
[suite]
name = "suspicion"
[[case]]
name = "tall"
m = 256
n = 1024
heads = 8
head_dim = 128
layout = { kind = "causal" }
)";

TEST_CASE("the witness reads the rows witnessed_rows names, and no others", "[judge]") {
  const judged_case k{cases::parse_suite(kTallSuite, "suspicion.toml")};
  const auto dot = GENERATE(bounds::dot_accumulator::fp32, bounds::dot_accumulator::sm90_wgmma);
  const kernels::contract c = kernels::declared_arithmetic(dot);
  CAPTURE(bounds::traits(dot).name);
  judge::reference_cache references(k.p, nullptr, {}, 1);
  const exact::result& reference = references.reference(c);
  std::vector<float> whole = reference.logits;
  compare::subject s = compare::subject_of(k.p, nullptr, c, std::nullopt, {whole.data(), k.p.m, k.p.n, k.p.n}, 1);
  s.reference = &reference;
  s.centre = references.centre(c);
  const std::vector<std::int64_t> rows = judge::witnessed_rows(s);
  REQUIRE_FALSE(rows.empty());
  if (s.centre)
    CHECK(rows == s.centre->rows);  // a modelled contract's witness is its centre, on the centre's rows
  else
    CHECK(static_cast<std::int64_t>(rows.size()) < k.p.m);  // a CPU model's: a sample of the judged rows
  const auto counts = judge::answer_copy_counts(s);
  REQUIRE(counts);
  CHECK(counts->differing > 0);  // the output is the reference: every differing element matched
  CHECK(counts->matched == counts->differing);
  // Only those rows brought over (a GPU's output copied row by row): the same counts.
  std::vector<float> sampled(whole.size(), NAN);
  for (const std::int64_t i : rows)
    std::copy_n(whole.begin() + i * k.p.n, k.p.n, sampled.begin() + i * k.p.n);
  s.output = {sampled.data(), k.p.m, k.p.n, k.p.n};
  const auto from_rows = judge::answer_copy_counts(s);
  REQUIRE(from_rows);
  CHECK(from_rows->differing == counts->differing);
  CHECK(from_rows->matched == counts->matched);
  // Those rows packed in witnessed_rows' order (a GPU's output copied row by row to the host), the
  // output itself not read: the same counts.
  std::vector<float> packed;
  for (const std::int64_t i : rows) packed.insert(packed.end(), whole.begin() + i * k.p.n, whole.begin() + (i + 1) * k.p.n);
  s.output = {nullptr, k.p.m, k.p.n, k.p.n};
  const auto from_packed = judge::answer_copy_counts(s, packed);
  REQUIRE(from_packed);
  CHECK(from_packed->differing == counts->differing);
  CHECK(from_packed->matched == counts->matched);
  packed.pop_back();
  CHECK_THROWS_AS(judge::answer_copy_counts(s, packed), std::invalid_argument);
  s.output = {sampled.data(), k.p.m, k.p.n, k.p.n};

  SECTION("no witness, no rows: an exact contract, bfloat16 logits, no reference") {
    compare::subject none = s;
    none.reference = nullptr;
    CHECK(judge::witnessed_rows(none).empty());
    none = s;
    none.contract.dot = bounds::dot_accumulator::exact;
    CHECK(judge::witnessed_rows(none).empty());
    none = s;
    none.contract.logits = kernels::logits_precision::bf16;
    CHECK(judge::witnessed_rows(none).empty());
  }
}
