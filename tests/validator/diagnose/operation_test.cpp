// A planted bug as an edit of the operation: the exact reference of the edited problem is what the
// bug computes, exactly.
#include <catch2/catch.hpp>

#include <cmath>

#include "kernels/cpu/planted.hpp"
#include "reference/fp8/convert.hpp"
#include "support.hpp"
#include "validator/diagnose/operation.hpp"

using namespace mqa;
using kernels::cpu::model_config;

TEST_CASE("k_scale before relu is the operation on negated keys with |k_scale|", "[diagnose]") {
  const auto format = GENERATE(as<std::string>{}, "e4m3fn", "e4m3fnuz", "e5m2");
  CAPTURE(format);
  const test::bench b(6, 24, 3, 16,
                      "special = [\"negative-k-scale\", \"zero-k-scale\", \"nan\"]\nspecial_count = 4\nq_format = \"" +
                          format + "\"\nk_format = \"" + format + "\"\nprofile = \"torch\"");
  model_config planted;
  planted.scale = bounds::scale_placement::before_relu;
  const auto op = diagnose::materialize({}, planted, b.p, b.contract);
  REQUIRE(op);
  CHECK(op->inputs_edited);
  const exact::result edited = exact::compute(op->problem->view);

  // The oracle: sum_h w relu(s x) in long double, x exact (the dots of these fp8 values are).
  const auto& qv = fp8::decode_table(b.p.q_format);
  const auto& kv = fp8::decode_table(b.p.k_format);
  for (std::int64_t i = 0; i < b.p.m; ++i) {
    const exact::window w = exact::clamped_window(b.p, i);
    for (std::int64_t j = w.begin; j < w.end; ++j) {
      const long double s = b.p.k_scale[static_cast<std::size_t>(j)];
      long double sum = 0;
      for (std::int64_t h = 0; h < b.p.heads; ++h) {
        long double x = 0;
        for (std::int64_t d = 0; d < b.p.head_dim; ++d)
          x += static_cast<long double>(qv[b.p.q[static_cast<std::size_t>((i * b.p.heads + h) * b.p.head_dim + d)]]) *
               kv[b.p.k[static_cast<std::size_t>(j * b.p.head_dim + d)]];
        const long double scaled = s * x;
        const long double relu = std::isnan(scaled) ? scaled : (scaled > 0 ? scaled : 0);
        sum += static_cast<long double>(b.p.weights[static_cast<std::size_t>(i * b.p.heads + h)]) * relu;
      }
      const float expected = static_cast<float>(sum), got = edited.logits[static_cast<std::size_t>(i * b.p.n + j)];
      CAPTURE(i, j, expected, got);
      if (std::isnan(expected)) CHECK(std::isnan(got));
      else CHECK(std::fabs(static_cast<double>(got) - expected) <= std::fabs(static_cast<double>(expected)) * 0x1p-23 + 0x1p-140);
    }
  }
}

TEST_CASE("input and window bugs are edits of the problem", "[diagnose]") {
  const test::bench b(8, 32, 4, 16, "layout = { kind = \"random\" }\nseed = 2");
  SECTION("a dropped head is a zero weight") {
    model_config c;
    c.dropped_head = 99;  // past the last: the last
    const auto op = diagnose::materialize({}, c, b.p, b.contract);
    REQUIRE(op);
    for (std::int64_t i = 0; i < b.p.m; ++i)
      for (std::int64_t h = 0; h < b.p.heads; ++h)
        CHECK(op->problem->view.weights[static_cast<std::size_t>(i * b.p.heads + h)] ==
              (h == b.p.heads - 1 ? 0.0f : b.p.weights[static_cast<std::size_t>(i * b.p.heads + h)]));
  }
  SECTION("a short dot is q's last elements zero") {
    model_config c;
    c.dot_length = -2;
    const auto op = diagnose::materialize({}, c, b.p, b.contract);
    REQUIRE(op);
    for (std::size_t x = 0; x < b.p.q.size(); ++x)
      CHECK(op->problem->view.q[x] == (x % 16 >= 14 ? 0x00 : b.p.q[x]));
  }
  SECTION("an inclusive end is ke + 1, within n") {
    model_config c;
    c.window_of = kernels::cpu::inclusive_end_window;
    const auto op = diagnose::materialize({}, c, b.p, b.contract);
    REQUIRE(op);
    for (std::int64_t i = 0; i < b.p.m; ++i) {
      const exact::window w = exact::clamped_window(b.p, i);
      CHECK(op->problem->view.ke[static_cast<std::size_t>(i)] == std::min<std::int64_t>(b.p.ke[static_cast<std::size_t>(i)] + 1, b.p.n));
      CHECK(op->problem->view.ks[static_cast<std::size_t>(i)] == std::min<std::int64_t>(w.begin, op->problem->view.ke[static_cast<std::size_t>(i)]));
    }
  }
  SECTION("a declared arithmetic is a contract edit, with its flags") {
    model_config c;
    c.dot = bounds::dot_accumulator::bf16;
    c.relu = exact::relu_rule::fmax;
    const auto op = diagnose::materialize({}, c, b.p, b.contract);
    REQUIRE(op);
    CHECK_FALSE(op->inputs_edited);
    CHECK(op->contract.dot == bounds::dot_accumulator::bf16);
    CHECK(diagnose::flags_for(b.contract, op->contract) == "--accumulate bf16 --relu fmax");
  }
  SECTION("output-side bugs have no edit of the operation") {
    for (auto plant : {+[](model_config& c) { c.tail_block = 16; }, +[](model_config& c) { c.skip_empty_rows = true; },
                       +[](model_config& c) { c.outside = kernels::cpu::outside_fill::zero; },
                       +[](model_config& c) { c.offset_limit_bytes = 1024; },
                       +[](model_config& c) { c.head_order_varies = true; }}) {
      model_config c;
      plant(c);
      CHECK_FALSE(diagnose::materialize({}, c, b.p, b.contract));
    }
  }
}
