// A paged case's cache (inputs.hpp, paged_cache.hpp): its slots hold exactly the keys a prefill
// case of num_blocks x block_kv keys draws, however many pieces and threads made them; scales
// are little-endian float32 after each block's codes; the bytes are pinned.
#include <catch2/catch.hpp>

#include <bit>
#include <cstring>

#include "reference/paged/problem.hpp"
#include "support.hpp"
#include "validator/inputs/inputs.hpp"

using namespace mqa;

namespace {

// The same keys as a paged case with `layout` and a prefill case of `slots` keys.
struct twins {
  inputs::tensors paged, prefill;
};

twins generate_twins(std::int64_t dim, const std::string& values, const std::string& layout) {
  twins t;
  t.paged = inputs::generate(test::input_case(4, 64, 2, dim, values + "\nlayout = " + layout));
  const inputs::paged_cache& c = *t.paged.paged;
  const std::int64_t slots = c.num_blocks * c.block_kv;
  t.prefill = inputs::generate(test::input_case(4, slots, 2, dim, values + "\nlayout = { kind = \"causal\" }"));
  return t;
}

}  // namespace

TEST_CASE("the cache's slots hold the keys a prefill case of as many keys draws", "[inputs][paged]") {
  const auto [values, layout] = GENERATE(table<std::string, std::string>({
      {"seed = 3", R"({ kind = "paged", block_kv = 16, context_min = 8, page_bytes = 448 })"},
      // Past one piece of generation (16384 keys): 1100 blocks of 16, made on several threads.
      {"seed = 4\ndistribution = \"outliers\"\nspecial = [\"nan\", \"zero-k-scale\", \"negative-k-scale\", \"largest\"]\nspecial_count = 40",
       R"({ kind = "paged", block_kv = 16, num_blocks = 1100 })"},
      {"seed = 5\ndistribution = \"near-ties\"\nk_scale = \"ue8m0\"", R"({ kind = "paged", block_kv = 64, num_blocks = 300 })"},
  }));
  CAPTURE(values, layout);
  const twins t = generate_twins(12, values, layout);
  const inputs::paged_cache& c = *t.paged.paged;
  CHECK(t.paged.k.empty());
  CHECK(t.paged.k_scale.empty());
  REQUIRE(c.kv_cache.size() == static_cast<std::size_t>(c.num_blocks * c.page_bytes));
  paged::problem p;
  p.head_dim = 12, p.block_kv = c.block_kv, p.page_bytes = c.page_bytes;
  int mismatches = 0;
  for (std::int64_t key = 0; key < c.num_blocks * c.block_kv; ++key) {
    const std::int64_t block = key / c.block_kv, slot = key % c.block_kv;
    mismatches += std::memcmp(c.kv_cache.data() + p.value_offset(block, slot), t.prefill.k.data() + key * 12, 12) != 0;
    const float scale = paged::scale_at(c.kv_cache, p.scale_offset(block, slot));
    mismatches += std::bit_cast<std::uint32_t>(scale) != std::bit_cast<std::uint32_t>(t.prefill.k_scale[static_cast<std::size_t>(key)]);
  }
  CHECK(mismatches == 0);
  CHECK(t.paged.q == t.prefill.q);
  CHECK(t.paged.weights == t.prefill.weights);
}

TEST_CASE("pages padded past their payload hold bytes drawn by the seed, not zeros", "[inputs][paged]") {
  const auto t = inputs::generate(test::input_case(4, 64, 2, 12, R"(layout = { kind = "paged", block_kv = 4, page_bytes = 128 })"));
  const inputs::paged_cache& c = *t.paged;
  int zeros = 0;
  for (std::int64_t block = 0; block < c.num_blocks; ++block)
    for (std::int64_t b = 4 * 16; b < 128; ++b) zeros += c.kv_cache[static_cast<std::size_t>(block * 128 + b)] == 0;
  CHECK(zeros < c.num_blocks * 64 / 32);
}

TEST_CASE("a paged case's inputs hash to a pinned value", "[inputs][paged]") {
  const auto t = inputs::generate(test::input_case(
      12, 300, 4, 32,
      "seed = 20261130\nspecial = [\"nan\", \"negative-k-scale\"]\nlayout = { kind = \"paged\", next_n = 3, block_kv = 32, "
      "context_lens_2d = true, fill = \"shared-prefix\", shared_blocks = 2, unused_entries = \"stale\", page_bytes = 1200 }"));
  // As for prefill bundles (inputs_test.cpp): changing this number changes every paged bundle.
  CHECK(inputs::fingerprint(t) == 0x956C72B45AA10136u);
}

TEST_CASE("the default page stride is the payload rounded up to a multiple of 4", "[inputs][paged]") {
  // head_dim 37 and one key per page: a payload of 41 bytes, which no kernel's float32 scales
  // could follow; the default stride must still make a problem the reference accepts.
  const auto [dim, block_kv, stride] = GENERATE(table<std::int64_t, std::int64_t, std::int64_t>({
      {37, 1, 44}, {37, 2, 84}, {37, 4, 164}, {12, 16, 256}, {128, 64, 8448}}));
  CAPTURE(dim, block_kv);
  const cases::case_spec spec =
      test::input_case(4, 64, 2, dim, fmt::format("layout = {{ kind = \"paged\", block_kv = {} }}", block_kv));
  const auto t = inputs::generate(spec);
  CHECK(t.paged->page_bytes == stride);
  CHECK_NOTHROW(paged::check_problem(inputs::paged_problem_of(spec, t)));
}
