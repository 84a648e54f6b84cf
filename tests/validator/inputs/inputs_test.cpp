#include <catch2/catch.hpp>

#include "support.hpp"
#include "validator/inputs/inputs.hpp"

using namespace mqa;

namespace {

// Every feature at once: outliers, ue8m0 k scales, a clamp bound, specials, a random layout.
const std::string kPinnedKeys = R"(
q_format = "e4m3fn"
k_format = "e4m3fnuz"
k_scale = "ue8m0"
profile = "saturate"
bound = 224.0
distribution = "outliers"
special = ["nan", "subnormal", "negative-k-scale"]
seed = 20250101
layout = { kind = "random", empty_fraction = 0.25 }
)";

}  // namespace

TEST_CASE("a generated bundle's arrays hash to a pinned value on every compiler, libc and CPU", "[inputs]") {
  const inputs::tensors t = inputs::generate(test::input_case(24, 80, 4, 64, kPinnedKeys));
  // Changing this number changes every bundle ever generated: only on purpose, with a note in
  // the commit saying why (a new stream, a new distribution shape).
  CHECK(inputs::fingerprint(t) == 0xA9A1A6EA9909A4A8u);
}

TEST_CASE("the same case gives the same inputs; another seed gives others", "[inputs]") {
  const auto a = inputs::generate(test::input_case(8, 20, 2, 16, "seed = 1"));
  const auto b = inputs::generate(test::input_case(8, 20, 2, 16, "seed = 1"));
  const auto c = inputs::generate(test::input_case(8, 20, 2, 16, "seed = 2"));
  CHECK(inputs::fingerprint(a) == inputs::fingerprint(b));
  CHECK(a.q == b.q);
  CHECK(inputs::fingerprint(a) != inputs::fingerprint(c));
  CHECK(a.q != c.q);
  CHECK(a.k != c.k);
}

TEST_CASE("each tensor has its own stream: the layout never moves q, k or the weights", "[inputs]") {
  const auto causal = inputs::generate(test::input_case(8, 20, 2, 16, "layout = { kind = \"causal\" }"));
  const auto random = inputs::generate(test::input_case(8, 20, 2, 16, "layout = { kind = \"random\" }"));
  CHECK(causal.q == random.q);
  CHECK(causal.k == random.k);
  CHECK(causal.weights == random.weights);
  CHECK(causal.ks != random.ks);
}

TEST_CASE("shapes follow the case", "[inputs]") {
  const auto t = inputs::generate(test::input_case(3, 5, 2, 7));
  CHECK(t.q.size() == 3 * 2 * 7);
  CHECK(t.k.size() == 5 * 7);
  CHECK(t.k_scale.size() == 5);
  CHECK(t.weights.size() == 3 * 2);
  CHECK(t.ks.size() == 3);
  CHECK(t.ke.size() == 3);
}

TEST_CASE("the fingerprint sees every array", "[inputs]") {
  const auto base = inputs::generate(test::input_case(3, 5, 2, 7));
  const auto h = inputs::fingerprint(base);
  auto changed = base;
  changed.q[0] ^= 1;
  CHECK(inputs::fingerprint(changed) != h);
  changed = base;
  changed.k_scale[4] = -changed.k_scale[4];
  CHECK(inputs::fingerprint(changed) != h);
  changed = base;
  changed.ke[2] -= 1;
  CHECK(inputs::fingerprint(changed) != h);
  changed = base;
  changed.weights[5] += 1;
  CHECK(inputs::fingerprint(changed) != h);
}

TEST_CASE("tensors generated in parts on every core: a longer one starts with a shorter one", "[inputs]") {
  // 48 rows x 128 heads = 6144 query tokens: two parts of generation, split at row 32. Every draw is
  // indexed by its place in the tensor, so the first 16 rows are those of the 16-row case.
  const inputs::tensors big = inputs::generate(test::input_case(48, 64, 128, 16, "distribution = \"outliers\""));
  const inputs::tensors small = inputs::generate(test::input_case(16, 64, 128, 16, "distribution = \"outliers\""));
  REQUIRE(big.q.size() == 3 * small.q.size());
  CHECK(std::equal(small.q.begin(), small.q.end(), big.q.begin()));
  CHECK(std::equal(small.weights.begin(), small.weights.end(), big.weights.begin()));
  CHECK(small.k == big.k);
}
