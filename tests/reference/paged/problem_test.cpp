// The paged operation's contract (reference/paged/problem.hpp): DeepGEMM's window rules, the
// cache's layout as gather() reads it, and every inconsistency named by request and block.
#include <catch2/catch.hpp>

#include <cstring>

#include "reference/paged/problem.hpp"

using namespace mqa;

namespace {

// Two requests, next_n = 2, block_kv = 2, head_dim = 3, pages padded to 24 bytes (payload 14):
// byte b of page p is 16 p + b for values, and the scales are the slot numbers plus the page.
struct small_cache {
  std::vector<std::uint8_t> q = std::vector<std::uint8_t>(4 * 1 * 3, 0x38);
  std::vector<float> weights = std::vector<float>(4, 1.0f);
  std::vector<std::uint8_t> cache;
  std::vector<std::int32_t> table{3, 1, 0, 2, -1, 7};  // request 0: blocks 3, 1, 0; request 1: 2, then unused
  std::vector<std::int32_t> lens{5, 2};
  paged::problem p;

  small_cache() {
    cache.assign(4 * 24, 0xEE);
    for (std::uint8_t page = 0; page < 4; ++page) {
      for (std::uint8_t b = 0; b < 6; ++b) cache[page * 24u + b] = static_cast<std::uint8_t>(16 * page + b);
      for (int slot = 0; slot < 2; ++slot) {
        const float s = static_cast<float>(page) + 0.5f * static_cast<float>(slot);
        std::memcpy(&cache[page * 24u + 6 + 4 * static_cast<unsigned>(slot)], &s, 4);  // x86 and Arm are little-endian
      }
    }
    p.batch = 2, p.next_n = 2, p.heads = 1, p.head_dim = 3, p.block_kv = 2, p.num_blocks = 4, p.page_bytes = 24;
    p.max_blocks = 3, p.max_context = 6;
    p.q = q, p.weights = weights, p.kv_cache = cache, p.block_table = table, p.context_lens = lens;
  }
};

}  // namespace

TEST_CASE("1-D windows end at L - next_n + t + 1, 2-D ones at each row's length", "[paged]") {
  small_cache s;
  // Request 0 (L = 5): rows see [0, 4) and [0, 5); request 1 (L = 2): [0, 1) and [0, 2).
  CHECK(paged::window_end(s.p, 0) == 4);
  CHECK(paged::window_end(s.p, 1) == 5);
  CHECK(paged::window_end(s.p, 2) == 1);
  CHECK(paged::window_end(s.p, 3) == 2);
  CHECK(paged::request_keys(s.p, 0) == 5);
  s.lens = {0, 1};  // shorter than next_n: empty windows, never negative ones
  s.p.context_lens = s.lens;
  CHECK(paged::window_end(s.p, 0) == 0);
  CHECK(paged::window_end(s.p, 2) == 0);
  CHECK(paged::window_end(s.p, 3) == 1);
  std::vector<std::int32_t> two_d{3, 5, 0, 2};
  s.p.context_lens_2d = true;
  s.p.context_lens = two_d;
  CHECK(paged::window_end(s.p, 0) == 3);
  CHECK(paged::window_end(s.p, 1) == 5);
  CHECK(paged::window_end(s.p, 2) == 0);
  CHECK(paged::request_keys(s.p, 1) == 2);
  const paged::row_windows w = paged::windows_of(s.p);
  CHECK(w.ke == std::vector<std::int32_t>{3, 5, 0, 2});
  CHECK(w.ks == std::vector<std::int32_t>{0, 0, 0, 0});
  const exact::problem rows = paged::rows_view(s.p, w);
  CHECK(rows.m == 4);
  CHECK(rows.n == 6);
  CHECK(rows.k.empty());
}

TEST_CASE("gather reads each key's codes and scale through the table, past the page padding", "[paged]") {
  small_cache s;
  paged::check_problem(s.p);
  const paged::gathered_keys g = paged::gather(s.p, 0, 5);
  // Keys 0, 1 in page 3; 2, 3 in page 1; 4 in page 0, slot 0.
  const std::vector<std::uint8_t> codes{48, 49, 50, 51, 52, 53, 16, 17, 18, 19, 20, 21, 0, 1, 2};
  CHECK(g.k == codes);
  CHECK(g.k_scale == std::vector<float>{3.0f, 3.5f, 1.0f, 1.5f, 0.0f});
  CHECK(paged::scale_at(s.p.kv_cache, s.p.scale_offset(2, 1)) == 2.5f);
}

TEST_CASE("inconsistent paged problems are named by request and block", "[paged]") {
  small_cache s;
  SECTION("a used table entry outside the cache") {
    s.table[1] = 4;
    CHECK_THROWS_WITH(paged::check_problem(s.p),
                      Catch::Contains("request 0, logical block 1: the block table maps it to block 4, outside the "
                                      "cache's 4 blocks"));
  }
  SECTION("unused entries may hold anything") {
    s.table[4] = -1, s.table[5] = 1000;
    CHECK_NOTHROW(paged::check_problem(s.p));
  }
  SECTION("a context longer than the table covers") {
    s.lens[1] = 7;
    s.p.max_context = 8;
    CHECK_THROWS_WITH(paged::check_problem(s.p),
                      Catch::Contains("request 1: the context of 7 keys needs 4 blocks of 2, but the block table "
                                      "covers 3 blocks"));
  }
  SECTION("a context longer than the output") {
    s.lens[0] = 7;
    CHECK_THROWS_WITH(paged::check_problem(s.p), Catch::Contains("longer than max_context = 6"));
  }
  SECTION("a page stride not a multiple of 4") {
    s.p.page_bytes = 22;
    CHECK_THROWS_WITH(paged::check_problem(s.p), Catch::Contains("page stride of 22 bytes is not a multiple of 4"));
  }
  SECTION("a page stride smaller than the payload") {
    s.p.page_bytes = 12;
    CHECK_THROWS_WITH(paged::check_problem(s.p), Catch::Contains("smaller than a page's payload of block_kv x "
                                                                 "(head_dim + 4) = 2 x 7 = 14 bytes"));
  }
  SECTION("arrays of the wrong size") {
    s.lens.push_back(1);
    s.p.context_lens = s.lens;
    CHECK_THROWS_WITH(paged::check_problem(s.p), Catch::Contains("context_lens has 3 entries, expected 2"));
  }
}
