// A paged case's block table, context lengths and windows (validator/layout/paged.hpp).
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <set>

#include "validator/case/load.hpp"
#include "validator/layout/paged.hpp"

using namespace mqa;

namespace {

cases::case_spec paged_case(std::int64_t m, std::int64_t n, const std::string& layout, std::uint64_t seed = 7) {
  return cases::parse_suite(fmt::format("[suite]\nname = \"t\"\n[[case]]\nname = \"c\"\nm = {}\nn = {}\nheads = 2\n"
                                        "head_dim = 16\nseed = {}\nlayout = {}\n",
                                        m, n, seed, layout),
                            "t.toml")
      .cases.at(0);
}

std::int32_t entry(const layout::paged_layout& l, std::int64_t b, std::int64_t i) {
  return l.block_table[static_cast<std::size_t>(b * l.max_blocks + i)];
}

}  // namespace

TEST_CASE("paged: listed lengths, 1-D windows, a shuffled pool and zeros past each context", "[layout][paged]") {
  const auto c = paged_case(8, 200, R"({ kind = "paged", next_n = 2, block_kv = 16, context_lengths = [0, 16, 17, 200] })");
  const layout::paged_layout l = layout::make_paged_layout(c);
  CHECK(l.batch == 4);
  CHECK(l.max_blocks == 13);                   // ceil(200 / 16): the table covers n
  CHECK(l.num_blocks == 0 + 1 + 2 + 13 + 4);   // the blocks used and one spare per request
  CHECK(l.context_lens == std::vector<std::int32_t>{0, 16, 17, 200});
  CHECK(l.rows.ks == std::vector<std::int32_t>(8, 0));
  CHECK(l.rows.ke == std::vector<std::int32_t>{0, 0, 15, 16, 16, 17, 199, 200});
  std::set<std::int32_t> used;
  for (std::int64_t b = 0; b < 4; ++b)
    for (std::int64_t i = 0; i < l.max_blocks; ++i) {
      const std::int64_t blocks = (l.context_lens[static_cast<std::size_t>(b)] + 15) / 16;
      if (i >= blocks) {
        CHECK(entry(l, b, i) == 0);
        continue;
      }
      CHECK(used.insert(entry(l, b, i)).second);  // no block handed out twice
      CHECK(entry(l, b, i) < l.num_blocks);
    }
  CHECK(used.size() == 16);
  std::vector<std::int32_t> in_order(used.begin(), used.end());
  CHECK(in_order != std::vector<std::int32_t>(l.block_table.begin() + 13 * 3, l.block_table.begin() + 13 * 4));
}

TEST_CASE("paged: sequential blocks, a shared prefix, -1 and stale entries", "[layout][paged]") {
  SECTION("sequential: request 0's logical blocks are its physical ones") {
    const auto l = layout::make_paged_layout(
        paged_case(3, 64, R"({ kind = "paged", block_kv = 16, fill = "sequential", context_lengths = [64, 20, 1] })"));
    CHECK(l.block_table == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 0, 0, 6, 0, 0, 0});
  }
  SECTION("shared-prefix: every request's first blocks are the same ones") {
    const auto l = layout::make_paged_layout(paged_case(
        3, 64,
        R"({ kind = "paged", block_kv = 16, fill = "shared-prefix", shared_blocks = 2, context_lengths = [64, 20, 10], unused_entries = "minus-one" })"));
    CHECK(entry(l, 0, 0) == entry(l, 1, 0));
    CHECK(entry(l, 0, 0) == entry(l, 2, 0));
    CHECK(entry(l, 0, 1) == entry(l, 1, 1));
    CHECK(entry(l, 2, 1) == -1);
    CHECK(entry(l, 0, 2) != entry(l, 0, 3));
    CHECK(l.num_blocks == 2 + 2 + 3);
  }
  SECTION("stale: entries past a context are blocks of the cache") {
    const auto l = layout::make_paged_layout(
        paged_case(2, 256, R"({ kind = "paged", block_kv = 16, unused_entries = "stale", context_lengths = [16, 0] })"));
    std::set<std::int32_t> stale;
    for (std::int64_t i = 1; i < l.max_blocks; ++i) stale.insert(entry(l, 0, i));
    for (const auto e : stale) CHECK((e >= 0 && e < l.num_blocks));
    CHECK(stale.size() > 1);
  }
}

TEST_CASE("paged: 2-D lengths draw each row at most the request's last, drawn lengths stay in range", "[layout][paged]") {
  const auto c = paged_case(40, 300, R"({ kind = "paged", next_n = 4, context_lens_2d = true, context_min = 100, context_max = 250 })");
  const layout::paged_layout l = layout::make_paged_layout(c);
  REQUIRE(l.context_lens.size() == 40);
  for (std::size_t b = 0; b < 10; ++b) {
    const std::int32_t last = l.context_lens[4 * b + 3];
    CHECK((last >= 100 && last <= 250));
    for (std::size_t t = 0; t < 4; ++t) {
      CHECK(l.context_lens[4 * b + t] <= last);
      CHECK(l.rows.ke[4 * b + t] == l.context_lens[4 * b + t]);
    }
  }
  const layout::paged_layout again = layout::make_paged_layout(c);
  CHECK(again.block_table == l.block_table);
  CHECK(layout::make_paged_layout(paged_case(40, 300, R"({ kind = "paged", next_n = 4, context_lens_2d = true })", 8))
            .context_lens != l.context_lens);
}
