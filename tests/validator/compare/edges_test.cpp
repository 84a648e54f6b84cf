// Verdicts at the edges: correct kernels near float32's
// underflow and overflow thresholds must pass under every order of operations their contract
// allows, an input infinity must be reproduced, and mask, scale and metric findings must say what
// they saw. Kernel outputs here are written by plain float32 loops in the order each kernel uses,
// sharing nothing with the comparator or the bound.
#include <catch2/catch.hpp>

#include <functional>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <set>

#include "support.hpp"
#include "support/findings_text.hpp"

using namespace mqa;

namespace {

// A problem set by hand, and the float32 dot the kernels here are written with.
struct hand_case : test::hand_case {
  using test::hand_case::hand_case;

  // relu of the float32 dot of head h (exact here: small integers times powers of two).
  float relu_dot(std::int64_t i, std::int64_t h, std::int64_t j) const {
    float s = 0;
    for (std::int64_t d = 0; d < head_dim; ++d) s += static_cast<float>(qv(i, h, d)) * static_cast<float>(kv(j, d));
    return s > 0 ? s : 0.0f;
  }
};

const compare::finding* find(const compare::judgement& j, compare::finding_class c) {
  for (const auto& f : j.findings)
    if (f.kind == c) return &f;
  return nullptr;
}

kernels::contract with_scale(bounds::scale_placement s) {
  kernels::contract c;
  c.scale = s;
  return c;
}

// k_scale = 2^-126 and weights near 2^-18: every head term, and the result, is a float32 subnormal
// of a few significant bits.
hand_case underflow_case() {
  hand_case c(4, 6, 8, 4);
  c.fill_q([](std::int64_t i, std::int64_t h, std::int64_t d) { return 0.5 + 0.25 * static_cast<double>((i + 3 * h + d) % 6); });
  c.fill_k([](std::int64_t j, std::int64_t d) { return 0.75 + 0.125 * static_cast<double>((2 * j + d) % 5); });
  for (std::int64_t x = 0; x < c.m * c.heads; ++x)
    c.weights[static_cast<std::size_t>(x)] = std::ldexp(static_cast<float>(x % 2 ? 1.0 + 0.125 * (x % 7) : -1.5 + 0.0625 * (x % 5)), -18);
  for (std::int64_t j = 0; j < c.n; ++j) c.k_scale[static_cast<std::size_t>(j)] = std::ldexp(1.0f + 0.25f * static_cast<float>(j % 3), -126);
  c.finish();
  return c;
}

}  // namespace

TEST_CASE("near underflow, each kernel order passes under the placement it declares", "[compare][edges]") {
  const auto [name, declared] = GENERATE(table<const char*, bounds::scale_placement>({
      {"per-lane", bounds::scale_placement::after_head_sum},
      {"into-weights", bounds::scale_placement::after_head_sum},
      {"into-weights", bounds::scale_placement::into_weights},
      {"before-relu", bounds::scale_placement::before_relu},
  }));
  CAPTURE(name, bounds::to_string(declared));
  hand_case c = underflow_case();
  std::int64_t differ = 0;
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      const float s = c.k_scale[static_cast<std::size_t>(j)];
      float total = 0;
      if (std::string(name) == "per-lane") {
        for (std::int64_t lane = 0; lane < 4; ++lane) {
          float partial = 0;
          for (std::int64_t h = lane; h < c.heads; h += 4) partial += c.w(i, h) * c.relu_dot(i, h, j);
          total += s * partial;
        }
      } else if (std::string(name) == "into-weights") {
        for (std::int64_t h = 0; h < c.heads; ++h) total += (s * c.w(i, h)) * c.relu_dot(i, h, j);
      } else {
        for (std::int64_t h = 0; h < c.heads; ++h) {
          float dot = 0;
          for (std::int64_t d = 0; d < c.head_dim; ++d) dot += static_cast<float>(c.qv(i, h, d)) * static_cast<float>(c.kv(j, d));
          const float scaled = s * dot;
          total += c.w(i, h) * (scaled > 0 ? scaled : 0.0f);
        }
      }
      differ += std::bit_cast<std::uint32_t>(total) != std::bit_cast<std::uint32_t>(c.ref(i, j));
      c.out(i, j) = total;
    }
  REQUIRE(differ > 0);  // the order loses something the bound must excuse
  const auto j = c.judge(with_scale(declared));
  INFO((j.findings.empty() ? std::string("-") : j.findings.front().detail));
  CHECK(j.pass());
}

TEST_CASE("a partial head sum may overflow before a small k_scale multiplies it", "[compare][edges]") {
  // q = k = 448, w = 2^100, s = 2^-8: each head term is 448^2 * 128 * 2^100 ~ 2^124.6, sixteen of
  // them pass 2^128, while the exact result (times 2^-8) is finite.
  hand_case c(2, 3, 16, 128);
  c.fill_q([](auto, auto, auto) { return 448.0; });
  c.fill_k([](auto, auto) { return 448.0; });
  std::fill(c.weights.begin(), c.weights.end(), 0x1p100f);
  std::fill(c.k_scale.begin(), c.k_scale.end(), 0x1p-8f);
  c.finish();
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      REQUIRE(std::isfinite(c.ref(i, j)));
      float sum = 0;
      for (std::int64_t h = 0; h < c.heads; ++h) sum += c.w(i, h) * c.relu_dot(i, h, j);
      REQUIRE(std::isinf(sum));
      c.out(i, j) = c.k_scale[static_cast<std::size_t>(j)] * sum;  // +inf: the order of a plain head sum
    }
  CHECK(c.judge().pass());
  // Declared into-weights or before-relu, no partial sum passes 2^128: +inf is a finding there.
  CHECK(test::finding_classes(c.judge(with_scale(bounds::scale_placement::into_weights))).count("inf"));
}

TEST_CASE("top-k is excused where overflow is: two excused +inf are indistinguishable", "[compare][edges]") {
  // As above, partial head sums overflow before k_scale < 1 brings the exact values back into
  // range: key 1's exact value is the largest, the kernel's +inf on keys 0 and 1 is excused on
  // both, so its top-1 (key 0, first of the tie) is as good as the exact one.
  hand_case c(1, 3, 16, 128);
  c.fill_q([](auto, auto, auto) { return 448.0; });
  c.fill_k([](auto, auto) { return 448.0; });
  std::fill(c.weights.begin(), c.weights.end(), 0x1p100f);
  c.k_scale = {0x1p-8f, 0x1.8p-8f, 0x1p-9f};
  c.finish();
  REQUIRE(std::isfinite(c.ref(0, 0)));
  REQUIRE(c.ref(0, 1) > c.ref(0, 0));
  c.out(0, 0) = INFINITY;
  c.out(0, 1) = INFINITY;
  compare::subject in = c.subject();
  in.topk = 1;
  const auto j = compare::judge(in);
  INFO((j.findings.empty() ? std::string("-") : j.findings.front().detail));
  CHECK(j.pass());
}

TEST_CASE("top-k is excused where overflow is: a key whose exact value overflowed to -inf may outrank its equals",
          "[compare][edges]") {
  // Every logit is negative; keys 0 to 3 overflow float32 (exact -inf, the overflow excused), keys
  // 4 to 7 do not. The exact top-5 holds the four finite keys and key 0 (first of the -inf tie);
  // a kernel that writes -FLT_MAX at key 3 (a legitimate value of an excused overflow) keeps key 3
  // instead, and values within the contract rank it so.
  hand_case c(1, 8, 1, 16);
  test::make_negative_overflow(c);
  c.out(0, 3) = -std::numeric_limits<float>::max();
  compare::subject in = c.subject();
  in.topk = 5;
  const auto j = compare::judge(in);
  INFO((j.findings.empty() ? std::string("-") : j.findings.front().detail));
  CHECK(j.pass());
  CHECK(j.stats.topk_rows == 1);
}

TEST_CASE("an infinity the inputs make must be reproduced, not any finite value", "[compare][edges]") {
  hand_case c(2, 4, 2, 4);
  c.q_format = c.k_format = fp8::format::e5m2;
  c.fill_q([](auto, auto, auto) { return 1.5; });
  c.fill_k([](auto, auto) { return 2.0; });
  c.k[1 * 4 + 2] = 0x7C;  // +inf in key 1
  c.finish();
  REQUIRE(std::isinf(c.ref(0, 1)));
  REQUIRE(c.ref(0, 1) > 0);
  CHECK(c.judge().pass());
  c.out(0, 1) = 3.0e38f;  // finite, same sign
  CHECK(test::finding_classes(c.judge()).count("error-bound"));
  c.out(0, 1) = std::numeric_limits<float>::max();
  CHECK(test::finding_classes(c.judge()).count("error-bound"));
}

TEST_CASE("a window end moved by +2 is a mask-shift also where n clips it to +1", "[compare][edges]") {
  hand_case c(6, 20, 2, 4);
  c.fill_q([](auto i, auto h, auto d) { return 0.5 + 0.25 * static_cast<double>((i + h + d) % 4); });
  c.fill_k([](auto j, auto d) { return 1.0 + 0.25 * static_cast<double>((j + d) % 3); });
  c.ks = {0, 2, 5, 7, 9, 11};
  c.ke = {6, 9, 12, 15, 17, 19};  // the last row ends at n - 1: it can show one key of the two
  c.finish();
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = c.ke[static_cast<std::size_t>(i)]; j < std::min<std::int64_t>(c.ke[static_cast<std::size_t>(i)] + 2, c.n); ++j)
      c.out(i, j) = 1.0f;
  const auto j = c.judge();
  REQUIRE(find(j, compare::finding_class::mask_shift));
  CHECK_THAT(find(j, compare::finding_class::mask_shift)->detail, Catch::Contains("end shifted by +2"));
  CHECK(find(j, compare::finding_class::mask_shift)->shift == compare::window_shift{0, 2});
  CHECK_FALSE(test::finding_classes(j).count("mask-leak"));
}

TEST_CASE("an inverted window alone is no evidence of a shift", "[compare][edges]") {
  hand_case c(4, 20, 2, 4);
  c.fill_q([](auto, auto, auto) { return 1.0; });
  c.fill_k([](auto, auto) { return 1.0; });
  c.ks = {0, 9, 3, 5};
  c.ke = {6, 2, 8, 12};  // row 1: ks > ke, an empty window
  c.finish();
  for (std::int64_t j = 2; j < 9; ++j) c.out(1, j) = 1.0f;  // the kernel wrote [ke, ks): leaks before "ks"
  const auto j = c.judge();
  CHECK(test::finding_classes(j).count("mask-leak"));
  CHECK_FALSE(test::finding_classes(j).count("mask-shift"));
}

TEST_CASE("an overflowing accumulation writing -inf is inf, masking -inf is a hole", "[compare][edges]") {
  hand_case c(2, 10, 2, 4);
  c.fill_q([](auto, auto, auto) { return 1.0; });
  c.fill_k([](auto j, auto) { return 1.0 + 0.5 * static_cast<double>(j % 3); });
  c.weights = {-1.0f, -0.5f, 2.0f, 1.0f};  // row 0 negative, row 1 positive
  c.finish();
  REQUIRE(c.ref(0, 4) < 0);
  REQUIRE(c.ref(1, 4) > 0);
  SECTION("negative exact value inside the window: an overflow") {
    c.out(0, 4) = -INFINITY;
    const auto j = c.judge();
    CHECK(test::finding_classes(j) == std::set<std::string>{"inf"});
  }
  SECTION("positive exact value: no overflow gives -inf there, a hole") {
    c.out(1, 4) = -INFINITY;
    CHECK(test::finding_classes(c.judge()).count("mask-hole"));
  }
  SECTION("+inf likewise is inf") {
    c.out(1, 4) = INFINITY;
    CHECK(test::finding_classes(c.judge()) == std::set<std::string>{"inf"});
  }
}

TEST_CASE("a mask finding does not drag a duplicate topk-mismatch", "[compare][edges]") {
  hand_case c(3, 12, 2, 4);
  c.fill_q([](auto, auto, auto) { return 1.0; });
  c.fill_k([](auto j, auto) { return 0.5 + 0.25 * static_cast<double>(j % 4); });
  c.weights = {-1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f};  // every logit negative: a 0 fill outranks all
  c.ks = {2, 3, 4};
  c.ke = {8, 9, 10};
  c.finish();
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j)
      if (j < c.ks[static_cast<std::size_t>(i)] || j >= c.ke[static_cast<std::size_t>(i)]) c.out(i, j) = 0.0f;
  compare::subject in = c.subject();
  in.topk = 2;
  const auto j = compare::judge(in);
  CHECK(test::finding_classes(j) == std::set<std::string>{"mask-leak"});
  REQUIRE(find(j, compare::finding_class::mask_leak));
  CHECK_THAT(find(j, compare::finding_class::mask_leak)->detail, Catch::Contains("top-k of 3 rows"));
}

TEST_CASE("a power of two on some keys, or everywhere under a loose contract, is a scale-factor", "[compare][edges]") {
  hand_case c(24, 50, 4, 16);
  c.fill_q([](auto i, auto h, auto d) { return 0.25 * static_cast<double>((3 * i + 5 * h + d) % 9) - 0.75; });
  c.fill_k([](auto j, auto d) { return 0.5 * static_cast<double>((7 * j + 3 * d) % 5) - 0.5; });
  for (std::size_t x = 0; x < c.weights.size(); ++x) c.weights[x] = x % 3 ? 0.75f : -1.25f;
  for (std::int64_t i = 0; i < c.m; ++i) c.ks[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i), c.ke[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i + 26);
  c.finish();
  SECTION("halved on 48% of the keys") {
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t j = c.ks[static_cast<std::size_t>(i)]; j < c.ke[static_cast<std::size_t>(i)]; ++j)
        if (j % 25 < 12) c.out(i, j) *= 0.5f;
    const auto j = c.judge();
    CHECK(test::finding_classes(j) == std::set<std::string>{"scale-factor"});
    REQUIRE(find(j, compare::finding_class::scale_factor));
    CHECK_THAT(find(j, compare::finding_class::scale_factor)->detail, Catch::Contains("2^-1"));
  }
  SECTION("doubled everywhere, declared fp22-truncated") {
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t j = c.ks[static_cast<std::size_t>(i)]; j < c.ke[static_cast<std::size_t>(i)]; ++j) c.out(i, j) *= 2.0f;
    kernels::contract loose;
    loose.dot = bounds::dot_accumulator::fp22_truncated;
    const auto j = c.judge(loose);
    CHECK(test::finding_classes(j) == std::set<std::string>{"scale-factor"});
  }
  SECTION("random errors are no power of two") {
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t j = c.ks[static_cast<std::size_t>(i)]; j < c.ke[static_cast<std::size_t>(i)]; ++j)
        c.out(i, j) = c.out(i, j) * (1.0f + 0.37f * static_cast<float>((i * 7 + j * 3) % 5)) + 0.3f;
    const auto j = c.judge();
    CHECK(test::finding_classes(j).count("error-bound"));
    CHECK_FALSE(test::finding_classes(j).count("scale-factor"));
  }
}

TEST_CASE("metrics say none compared when nothing was", "[compare][edges]") {
  hand_case c(3, 8, 2, 4);
  c.fill_q([](auto, auto, auto) { return 1.0; });
  c.fill_k([](auto, auto) { return 1.0; });
  c.finish();
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) c.out(i, j) = NAN;
  const auto j = c.judge();
  CHECK(test::finding_classes(j).count("nan"));
  CHECK(j.stats.compared == 0);
  CHECK_FALSE(j.stats.share_exact());
  CHECK_FALSE(j.stats.share_within_one_ulp());
  CHECK_FALSE(j.stats.max_error_over_bound());
  CHECK_FALSE(j.stats.topk_recall());
}
