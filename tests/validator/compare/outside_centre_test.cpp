// The rows a modelled contract's sampled centre leaves out are judged for what needs no centre
// (validator/compare/outside_centre.hpp): the poison, masking, NaN and infinities where no
// arithmetic overflows, and nothing where a value could legitimately be non-finite. The counts a
// test plants are its oracle.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>

#include "reference/bounds/accumulators.hpp"
#include "reference/paged/exact.hpp"
#include "validator/case/load.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/inputs/inputs.hpp"
#include "support.hpp"
#include "support/one_case.hpp"

using namespace mqa;

namespace {

constexpr std::int64_t kRowCount = 12, kKeyCount = 40;

const compare::finding* finding_in(const compare::judgement& j, compare::finding_class c) {
  for (const auto& f : j.findings)
    if (f.kind == c) return &f;
  return nullptr;
}

std::int64_t count_in(const compare::judgement& j, compare::finding_class c) {
  const compare::finding* f = finding_in(j, c);
  return f ? f->count : 0;
}

// Windows [i, 20 + i): keys outside on both sides of every row. Row 2's weights make its magnitude
// bound pass 2^120 (its values stay finite); key 15 holds a NaN code.
struct sampled_case {
  test::hand_case c{kRowCount, kKeyCount, 2, 32};
  kernels::contract contract = kernels::declared_arithmetic(bounds::dot_accumulator::sm90_wgmma);
  std::vector<std::int64_t> centre_rows{0, kRowCount - 1};
  exact::result centre;

  sampled_case() {
    c.fill_patterned();
    for (std::int64_t i = 0; i < kRowCount; ++i) {
      c.ks[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
      c.ke[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(20 + i);
    }
    c.weights[2 * 2] = c.weights[2 * 2 + 1] = 1e36f;
    c.k[15 * 32 + 5] = 0x7F;  // e4m3fn's NaN
    c.finish();
    exact::options o;
    o.rows = centre_rows;
    o.dot_model = bounds::traits(contract.dot).model;
    centre = exact::compute(c.p, o);
    // A kernel that agrees with the model on the sampled rows and with the exact value elsewhere.
    for (std::size_t r = 0; r < centre_rows.size(); ++r)
      std::copy_n(centre.logits.begin() + static_cast<std::ptrdiff_t>(r * kKeyCount), kKeyCount,
                  c.output.begin() + centre_rows[r] * kKeyCount);
  }
  compare::judgement judge() const {
    compare::subject s = c.subject(contract);
    s.centre = &centre;
    return compare::judge(s);
  }
  float& out(std::int64_t i, std::int64_t j) { return c.out(i, j); }
};

}  // namespace

TEST_CASE("rows outside a modelled centre are judged for what needs no centre", "[compare][outside-centre]") {
  sampled_case k;
  REQUIRE(std::isfinite(k.c.ref(2, 4)));
  REQUIRE(std::isnan(k.c.ref(5, 15)));

  SECTION("a kernel that is right passes, and the note says what the other rows were judged for") {
    const compare::judgement j = k.judge();
    CHECK(j.pass());
    CHECK(j.stats.rows_judged == 2);
    REQUIRE_FALSE(j.notes.empty());
    CHECK(j.notes.back() ==
          "judged on 2 of 12 rows: the modelled dots are computed for sampled rows (every row where a GPU computes the "
          "centre); the other 10 for unwritten values, masking, NaN and infinities");
  }
  SECTION("an unwritten block of rows") {
    for (std::int64_t i = 3; i <= 5; ++i)
      for (std::int64_t j = 0; j < kKeyCount; ++j) k.out(i, j) = std::bit_cast<float>(compare::kPoisonBits);
    const compare::judgement j = k.judge();
    const compare::finding* f = finding_in(j, compare::finding_class::unwritten);
    REQUIRE(f != nullptr);
    CHECK(f->count == 3 * kKeyCount);
    CHECK(f->first_row == 3);
    CHECK(f->first_col == 0);
    CHECK(f->expected_bits == std::bit_cast<std::uint32_t>(-INFINITY));  // outside the window
    CHECK(j.findings.size() == 1);
    std::int64_t heat = 0;
    for (const auto n : j.stats.heat.unwritten) heat += n;
    CHECK(heat == 3 * kKeyCount);
  }
  SECTION("the poison inside the window, where no centre gives the expected value") {
    k.out(4, 7) = std::bit_cast<float>(compare::kPoisonBits);
    const compare::judgement j = k.judge();
    const compare::finding* f = finding_in(j, compare::finding_class::unwritten);
    REQUIRE(f != nullptr);
    CHECK(f->count == 1);
    CHECK((f->first_row == 4 && f->first_col == 7));
    CHECK(std::isnan(std::bit_cast<float>(f->expected_bits)));  // judge::finish computes it
  }
  SECTION("a NaN, +inf and interior -inf are findings where the value is a number") {
    k.out(6, 10) = NAN;
    k.out(7, 12) = INFINITY;
    k.out(9, 17) = -INFINITY;
    const compare::judgement j = k.judge();
    CHECK(count_in(j, compare::finding_class::nan) == 1);
    CHECK(count_in(j, compare::finding_class::inf) == 2);
    CHECK(finding_in(j, compare::finding_class::inf)->first_row == 7);
    CHECK(count_in(j, compare::finding_class::mask_hole) == 0);
    std::int64_t nonfinite = 0;
    for (const auto n : j.stats.heat.nonfinite) nonfinite += n;
    CHECK(nonfinite == 3);
  }
  SECTION("-inf at a window's edge is a mask hole") {
    k.out(8, 8) = k.out(8, 9) = -INFINITY;  // row 8's window begins at key 8
    const compare::judgement j = k.judge();
    const compare::finding* f = finding_in(j, compare::finding_class::mask_hole);
    REQUIRE(f != nullptr);
    CHECK(f->count == 2);
    CHECK((f->first_row == 8 && f->first_col == 8));
    CHECK(j.stats.mask_holes == 2);
  }
  SECTION("a leak, and a window end read as inclusive in every row") {
    SECTION("one row") {
      k.out(10, 0) = 1.0f;
      const compare::judgement j = k.judge();
      CHECK(count_in(j, compare::finding_class::mask_leak) == 1);
      CHECK(finding_in(j, compare::finding_class::mask_leak)->first_row == 10);
    }
    SECTION("every row") {
      for (std::int64_t i = 0; i < kRowCount; ++i) k.out(i, 20 + i) = 0.5f;
      const compare::judgement j = k.judge();
      const compare::finding* f = finding_in(j, compare::finding_class::mask_shift);
      REQUIRE(f != nullptr);
      CHECK(f->count == kRowCount);  // the two sampled rows alone would show 2
      CHECK(j.stats.mask_leaks == kRowCount);
    }
  }
  SECTION("nothing where the value could legitimately be infinite or NaN") {
    k.out(2, 4) = INFINITY;  // row 2: magnitude bound past 2^120
    k.out(6, 15) = 0.0f;     // key 15: a NaN input (the exact value is NaN, not judged here)
    k.out(7, 15) = INFINITY;
    CHECK(k.judge().pass());
  }
  SECTION("under dont-care masking, outside the window anything goes") {
    k.contract.mask = kernels::masking::dont_care;
    k.out(3, 0) = std::bit_cast<float>(compare::kPoisonBits);
    k.out(3, kKeyCount - 1) = 2.0f;
    k.out(3, 5) = NAN;  // inside row 3's window [3, 23)
    const compare::judgement j = k.judge();
    CHECK(count_in(j, compare::finding_class::unwritten) == 0);
    CHECK(count_in(j, compare::finding_class::mask_leak) == 0);
    CHECK(count_in(j, compare::finding_class::nan) == 1);
  }
}

TEST_CASE("a paged problem's rows outside the centre are judged through their requests' keys", "[compare][outside-centre]") {
  const cases::suite s = test::parse_one_case(
      {.m = 12, .n = 80, .heads = 2, .head_dim = 32,
       .keys = "seed = 9\nlayout = { kind = \"paged\", next_n = 3, block_kv = 16, context_lengths = [80, 40, 9, 57] }"});
  const inputs::tensors t = inputs::generate(s.cases[0]);
  const exact::problem rows = inputs::problem_of(s.cases[0], t);
  const paged::problem p = inputs::paged_problem_of(s.cases[0], t);
  const kernels::contract contract = kernels::declared_arithmetic(bounds::dot_accumulator::sm90_wgmma);
  const exact::result reference = paged::compute(p, {});
  exact::options o;
  o.rows = {0, rows.m - 1};
  o.dot_model = bounds::traits(contract.dot).model;
  const exact::result centre = paged::compute(p, o);
  std::vector<float> output = reference.logits;
  for (std::size_t r = 0; r < o.rows.size(); ++r)
    std::copy_n(centre.logits.begin() + static_cast<std::ptrdiff_t>(r) * rows.n, rows.n,
                output.begin() + o.rows[r] * rows.n);
  compare::subject in = compare::subject_of(rows, &p, contract, std::nullopt, {output.data(), rows.m, rows.n, rows.n}, 2);
  in.reference = &reference;
  in.centre = &centre;
  REQUIRE(compare::judge(in).pass());

  // Row 4 is request 1's second row (context 40): its window holds keys below 40.
  const exact::window w = exact::clamped_window(rows, 4);
  REQUIRE(w.end > w.begin + 2);
  REQUIRE(w.end < rows.n);
  output[static_cast<std::size_t>(4 * rows.n + w.begin + 1)] = NAN;
  output[static_cast<std::size_t>(4 * rows.n + w.end)] = std::bit_cast<float>(compare::kPoisonBits);
  const compare::judgement j = compare::judge(in);
  CHECK(count_in(j, compare::finding_class::nan) == 1);
  CHECK(count_in(j, compare::finding_class::unwritten) == 1);
  CHECK(finding_in(j, compare::finding_class::unwritten)->first_row == 4);
}
