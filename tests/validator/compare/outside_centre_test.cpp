// The rows a modelled contract's sampled centre leaves out are judged for what needs no centre
// (validator/compare/outside_centre.hpp): the poison, masking, NaN and infinities where no
// arithmetic overflows, and nothing where a value could legitimately be non-finite. The counts a
// test plants are its oracle.
#include <catch2/catch.hpp>

#include <bit>
#include <functional>
#include <cmath>
#include <limits>

#include "reference/bounds/accumulators.hpp"
#include "reference/paged/exact.hpp"
#include "validator/case/load.hpp"
#include "reports/report.hpp"
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

// Windows [i, 20 + i): keys outside on both sides of every row. Row 2's weights put its magnitude
// bound past float32's range (its values stay finite); key 15 holds a NaN code. `adjust` edits the
// inputs before the references are computed; the centre is the first and the last row's.
struct sampled_case {
  std::int64_t m;
  test::hand_case c{m, kKeyCount, 2, 32};
  kernels::contract contract = kernels::declared_arithmetic(bounds::dot_accumulator::sm90_wgmma);
  std::vector<std::int64_t> centre_rows{0, m - 1};
  exact::result centre;
  unsigned threads = 0;

  explicit sampled_case(std::int64_t rows = kRowCount, const std::function<void(test::hand_case&)>& adjust = {})
      : m(rows) {
    c.fill_patterned();
    for (std::int64_t i = 0; i < m; ++i) {
      c.ks[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % 20);
      c.ke[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(20 + i % 20);
    }
    c.weights[2 * 2] = c.weights[2 * 2 + 1] = 3e36f;
    c.k[15 * 32 + 5] = 0x7F;  // e4m3fn's NaN
    if (adjust) adjust(c);
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
    s.threads = threads;
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
    CHECK_FALSE(f->expected_known);  // judge::finish computes it
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
    k.out(2, 4) = INFINITY;  // row 2: its magnitude bound past float32's range
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

TEST_CASE("an infinity where an order the contract allows overflows is no finding outside the centre either",
          "[compare][outside-centre]") {
  SECTION("partial head sums before k_scale (after-head-sum)") {
    // Row 5's weights 2^125 and every k_scale 2^-20: its values near 2^110, its head sum past 2^128.
    sampled_case k(kRowCount, [](test::hand_case& c) {
      c.weights[5 * 2] = c.weights[5 * 2 + 1] = 0x1p125f;
      for (auto& s : c.k_scale) s = 0x1p-20f;
    });
    REQUIRE(std::isfinite(k.c.ref(5, 7)));
    k.out(5, 7) = INFINITY;
    CHECK(k.judge().pass());
    k.out(6, 7) = INFINITY;  // a row of ordinary weights
    CHECK(count_in(k.judge(), compare::finding_class::inf) == 1);
  }
  SECTION("k_scale times a dot (before-relu)") {
    // Every weight 2^-30 and k_scale 2^125: values near 2^100, k_scale times a dot past 2^128.
    sampled_case k(kRowCount, [](test::hand_case& c) {
      for (auto& w : c.weights) w = 0x1p-30f;
      for (auto& s : c.k_scale) s = 0x1p125f;
    });
    REQUIRE(std::isfinite(k.c.ref(5, 7)));
    k.out(5, 7) = INFINITY;
    CHECK(count_in(k.judge(), compare::finding_class::inf) == 1);  // after-head-sum: no product overflows
    k.contract.scale = bounds::scale_placement::before_relu;
    CHECK(k.judge().pass());
  }
}

TEST_CASE("rows outside the centre split among threads give one thread's judgement", "[compare][outside-centre]") {
  sampled_case k(400);
  for (const std::int64_t i : {50, 150, 151, 250, 398})
    k.out(i, 20 + i % 20) = std::bit_cast<float>(compare::kPoisonBits);
  k.out(100, 30) = 1.0f;  // row 100's window is [0, 20)
  k.out(300, 5) = NAN;
  // Every outside row's window start masked: a hole where overflow is excluded, so not in row 2
  // (its magnitude bound past float32's range) nor at key 15 (a NaN input).
  std::int64_t holes = 0;
  for (std::int64_t i = 1; i < 399; ++i) {
    k.out(i, i % 20) = -INFINITY;
    holes += i != 2 && i % 20 != 15;
  }
  k.threads = 1;
  const compare::judgement one = k.judge();
  k.threads = 4;
  const compare::judgement four = k.judge();
  CHECK(count_in(one, compare::finding_class::unwritten) == 5);
  CHECK(count_in(one, compare::finding_class::mask_leak) == 1);
  CHECK(count_in(one, compare::finding_class::mask_hole) == holes);
  CHECK(count_in(one, compare::finding_class::nan) == 1);
  CHECK(reports::judgement_json(four).dump(1) == reports::judgement_json(one).dump(1));
}

TEST_CASE("a paged problem's rows outside the centre are judged through their requests' keys",
          "[compare][outside-centre]") {
  const cases::suite s = test::parse_one_case(
      {.m = 12, .n = 80, .heads = 2, .head_dim = 32,
       .keys = "seed = 9\nlayout = { kind = \"paged\", next_n = 3, block_kv = 16, "
               "context_lengths = [80, 40, 9, 57] }"});
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
  compare::subject in =
      compare::subject_of(rows, &p, contract, std::nullopt, {output.data(), rows.m, rows.n, rows.n}, 2);
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
