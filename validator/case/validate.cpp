#include "validate.hpp"

#include <fmt/core.h>

#include <tuple>

#include <numeric>

#include "paged.hpp"
#include "reference/paged/problem.hpp"

namespace mqa::cases {
namespace {

// Points every failure at the key that has to change, falling back to the [[case]] header for
// keys that were left to their defaults.
struct checker {
  const case_spec& c;
  const key_sources& sources;

  location where(std::string_view key) const {
    if (const auto it = sources.find(key); it != sources.end()) return it->second;
    if (key.starts_with("layout.")) return where("layout");
    return sources.at("");
  }
  [[noreturn]] void fail(std::string_view key, std::string_view problem) const {
    fail_at(where(key), c.name, key, problem);
  }
  bool given(std::string_view key) const { return sources.contains(key); }
};

void check_size(const checker& ch, std::string_view key, std::string_view what, std::int64_t a, std::int64_t b,
                std::int64_t c = 1) {
  // Each factor is below 2^31, so a * b fits; test before multiplying by c.
  const std::int64_t ab = a * b;
  if (ab > kMaxElements || ab * c > kMaxElements)
    ch.fail(key, fmt::format("{} = {} x {} x {} elements is too large (accepted: at most 2^32)", what, a, b, c));
}

void check_conversions(const checker& ch) {
  for (const auto& [conv, format_key] : {std::pair{ch.c.q_conversion(), "q_format"}, {ch.c.k_conversion(), "k_format"}}) {
    const auto why = fp8::why_invalid(conv);
    if (!why) continue;
    fp8::conversion unbounded = conv;
    unbounded.bound.reset();
    const bool bound_is_why = !fp8::why_invalid(unbounded);
    const char* key = bound_is_why ? "bound" : (ch.given("profile") ? "profile" : format_key);
    ch.fail(key, *why);
  }
}

// ---- layouts: one check per kind -------------------------------------------------------------

void check_causal_shape(const checker& ch, std::string_view layout_name) {
  if (ch.c.n < ch.c.m)
    ch.fail("n", fmt::format("layout '{}' gives row i the keys [0, n - m + i + 1), so it needs n >= m (found m = {}, "
                             "n = {})",
                             layout_name, ch.c.m, ch.c.n));
}

void check_packed(const checker& ch) {
  const layout_spec& l = ch.c.layout;
  const bool by_count = ch.given("layout.requests");
  const bool by_lists = ch.given("layout.query_lengths") || ch.given("layout.context_lengths");
  if (by_count == by_lists)
    ch.fail("layout", "a packed layout needs either 'requests' or both 'query_lengths' and 'context_lengths'");
  if (by_count) {
    if (l.requests > ch.c.m)
      ch.fail("layout.requests", fmt::format("{} requests cannot share m = {} rows (accepted: 1 to m)", l.requests, ch.c.m));
    if (ch.c.n < ch.c.m)
      ch.fail("n", fmt::format("each request needs at least as many keys as rows: n = {} < m = {}", ch.c.n, ch.c.m));
    return;
  }
  if (!ch.given("layout.query_lengths")) ch.fail("layout", "'context_lengths' needs 'query_lengths' too");
  if (!ch.given("layout.context_lengths")) ch.fail("layout", "'query_lengths' needs 'context_lengths' too");
  if (l.query_lengths.size() != l.context_lengths.size())
    ch.fail("layout.context_lengths", fmt::format("has {} entries but query_lengths has {} (one each per request)",
                                                  l.context_lengths.size(), l.query_lengths.size()));
  if (l.query_lengths.empty()) ch.fail("layout.query_lengths", "is empty (accepted: one length per request)");
  for (std::size_t r = 0; r < l.query_lengths.size(); ++r)
    if (l.context_lengths[r] < l.query_lengths[r])
      ch.fail(fmt::format("layout.context_lengths[{}]", r),
              fmt::format("request {} has {} rows but only {} keys (accepted: context length >= query length)", r,
                          l.query_lengths[r], l.context_lengths[r]));
  const std::int64_t rows = std::accumulate(l.query_lengths.begin(), l.query_lengths.end(), std::int64_t{0});
  const std::int64_t keys = std::accumulate(l.context_lengths.begin(), l.context_lengths.end(), std::int64_t{0});
  if (rows != ch.c.m) ch.fail("layout.query_lengths", fmt::format("sums to {} but m = {} (they must agree)", rows, ch.c.m));
  if (keys != ch.c.n)
    ch.fail("layout.context_lengths", fmt::format("sums to {} but n = {} (they must agree)", keys, ch.c.n));
}

void check_context_parallel(const checker& ch) {
  // DeepGEMM's generate_cp_test_data: two chunks of m / 2 rows from a sequence of n = cp_size * m keys.
  if (ch.c.m % 2 != 0)
    ch.fail("m", fmt::format("context-parallel splits the rows into two chunks: m = {} must be even", ch.c.m));
  if (ch.c.n % ch.c.m != 0)
    ch.fail("n", fmt::format("context-parallel needs n = cp_size * m: n = {} is not a multiple of m = {}", ch.c.n, ch.c.m));
  const std::int64_t cp_size = ch.c.n / ch.c.m;
  if (ch.c.layout.cp_rank && *ch.c.layout.cp_rank >= cp_size)
    ch.fail("layout.cp_rank", fmt::format("{} is not a rank of cp_size = n / m = {} (accepted: 0 to {})",
                                          *ch.c.layout.cp_rank, cp_size, cp_size - 1));
}

void check_compressed(const checker& ch) {
  const layout_spec& l = ch.c.layout;
  if (!ch.given("layout.ratio")) ch.fail("layout", "a compressed layout needs 'ratio' (an integer >= 1)");
  const std::int64_t last_end = l.start + (l.first_position + ch.c.m) / l.ratio;
  if (last_end > ch.c.n)
    ch.fail("n", fmt::format("the last row sees keys up to start + (first_position + m) / ratio = {} but n = {} "
                             "(accepted: n >= {})",
                             last_end, ch.c.n, last_end));
}

void check_sliding(const checker& ch) {
  if (!ch.given("layout.window")) ch.fail("layout", "a sliding layout needs 'window' (an integer >= 1)");
  check_causal_shape(ch, "sliding");
}

void check_explicit(const checker& ch) {
  const layout_spec& l = ch.c.layout;
  for (const auto* key : {"layout.ks", "layout.ke"})
    if (!ch.given(key)) ch.fail("layout", fmt::format("an explicit layout needs '{}' (m integers)", key + 7));
  for (const auto& [values, key] : {std::pair{&l.ks, "layout.ks"}, {&l.ke, "layout.ke"}})
    if (std::ssize(*values) != ch.c.m)
      ch.fail(key, fmt::format("has {} entries but m = {} (accepted: one per row)", values->size(), ch.c.m));
  if (l.out_of_range) return;  // the case asked for windows outside [0, n)
  const std::string allow = "or set out_of_range = true in the layout to test it on purpose";
  for (std::int64_t i = 0; i < ch.c.m; ++i) {
    const auto ks = l.ks[i], ke = l.ke[i];
    if (ks < 0)
      ch.fail(fmt::format("layout.ks[{}]", i), fmt::format("{} is negative (accepted: 0 <= ks <= ke <= n; {})", ks, allow));
    if (ke > ch.c.n)
      ch.fail(fmt::format("layout.ke[{}]", i),
              fmt::format("{} is past n = {} (accepted: 0 <= ks <= ke <= n; {})", ke, ch.c.n, allow));
    if (ks > ke)
      ch.fail(fmt::format("layout.ks[{}]", i),
              fmt::format("ks = {} > ke = {} (accepted: 0 <= ks <= ke <= n, ks == ke for an empty row; {})", ks, ke, allow));
  }
}

// paged: the rows are requests' queries, the contexts fit the output and the block
// table, the table's used entries lie in the cache, and pages hold their payload.
void check_paged_keys(const checker& ch) {
  const layout_spec& l = ch.c.layout;
  const bool listed = ch.given("layout.context_lengths");
  for (const char* key : {"layout.context_min", "layout.context_max"})
    if (listed && ch.given(key))
      ch.fail(key, "does not apply when context_lengths lists every request's length (accepted: one of the two)");
  const bool explicit_table = ch.given("layout.block_table");
  for (const char* key : {"layout.fill", "layout.shared_blocks", "layout.unused_entries"})
    if (explicit_table && ch.given(key))
      ch.fail(key, "does not apply with an explicit block_table (accepted: either block_table or fill and its keys)");
  if (ch.given("layout.shared_blocks") && l.fill != paged_fill::shared_prefix)
    ch.fail("layout.shared_blocks", fmt::format("applies to fill = \"shared-prefix\" only (this case's fill is '{}')",
                                                to_string(l.fill)));
  if (explicit_table && !ch.given("layout.num_blocks"))
    ch.fail("layout.block_table", "an explicit block_table needs num_blocks, the cache's physical blocks");
}

void check_paged(const checker& ch) {
  const case_spec& c = ch.c;
  const layout_spec& l = c.layout;
  check_paged_keys(ch);
  if (c.m % l.next_n != 0)
    ch.fail("m", fmt::format("a paged case has m = batch x next_n rows: m = {} is not a multiple of next_n = {}", c.m,
                             l.next_n));
  const std::int64_t batch = paged_batch(c);
  const std::int64_t max_blocks = l.max_blocks.value_or(default_max_blocks(c));
  // Before anything is sized by it (each at most 2^31: the product fits).
  if (batch * max_blocks > kMaxBlockTableEntries)
    ch.fail(ch.given("layout.max_blocks") ? "layout.max_blocks" : "n",
            fmt::format("a block table of {} requests x {} columns is too large (accepted: at most 2^26 entries)", batch,
                        max_blocks));
  const std::int64_t covered = max_blocks * l.block_kv;
  auto check_length = [&](std::string_view key, std::int64_t length, std::string_view who) {
    if (length > c.n)
      ch.fail(key, fmt::format("{}'s context of {} keys is longer than the output's n = {} columns (accepted: 0 to n)",
                               who, length, c.n));
    if (length > covered)
      ch.fail(key, fmt::format("{}'s context of {} keys needs {} blocks of {}, but the block table covers {} blocks "
                               "({} keys): a context longer than the table covers",
                               who, length, blocks_for(length, l.block_kv), l.block_kv, max_blocks, covered));
  };
  if (!l.context_lengths.empty()) {
    if (std::ssize(l.context_lengths) != batch)
      ch.fail("layout.context_lengths", fmt::format("has {} entries but the case has batch = m / next_n = {} / {} = {} "
                                                    "requests (accepted: one length per request)",
                                                    l.context_lengths.size(), c.m, l.next_n, batch));
    for (std::int64_t b = 0; b < batch; ++b)
      check_length(fmt::format("layout.context_lengths[{}]", b), l.context_lengths[static_cast<std::size_t>(b)],
                   fmt::format("request {}", b));
  } else {
    const std::int64_t hi = l.context_max.value_or(c.n);
    const std::string_view hi_key = ch.given("layout.context_max") ? "layout.context_max" : "n";
    if (l.context_min > hi)
      ch.fail("layout.context_min", fmt::format("{} is above context_max = {} (accepted: context_min <= context_max)",
                                                l.context_min, hi));
    check_length(hi_key, hi, "the longest drawn request");
  }
  const paged::key_bytes key = paged::key_bytes_of(c.k_format, c.head_dim);
  const std::int64_t payload = l.block_kv * (key.codes + key.scale);
  if (l.page_bytes && *l.page_bytes % 4 != 0)
    ch.fail("layout.page_bytes", fmt::format("a page stride of {} bytes is not a multiple of 4 (the scales are float32 "
                                             "or packed int32; accepted: a multiple of 4, at least {})",
                                             *l.page_bytes, payload));
  if (l.page_bytes && *l.page_bytes < payload)
    ch.fail("layout.page_bytes", fmt::format("a page stride of {} bytes is smaller than a page's payload of block_kv x "
                                             "({}) = {} x {} = {} bytes (accepted: a multiple of 4, at least {})",
                                             *l.page_bytes, paged::key_bytes_formula(c.k_format), l.block_kv,
                                             key.codes + key.scale, payload, payload));
  const std::vector<std::int64_t> keys = paged_request_keys(c, paged_context_lens(c));
  if (!l.block_table.empty()) {
    if (std::ssize(l.block_table) != batch)
      ch.fail("layout.block_table", fmt::format("has {} rows but the case has {} requests (accepted: one row per "
                                                "request)",
                                                l.block_table.size(), batch));
    for (std::int64_t b = 0; b < batch; ++b)
      if (std::ssize(l.block_table[static_cast<std::size_t>(b)]) != max_blocks)
        ch.fail(fmt::format("layout.block_table[{}]", b),
                fmt::format("has {} entries but max_blocks = {} (accepted: every row max_blocks long)",
                            l.block_table[static_cast<std::size_t>(b)].size(), max_blocks));
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t i = 0; i < blocks_for(keys[static_cast<std::size_t>(b)], l.block_kv); ++i) {
        const std::int64_t entry = l.block_table[static_cast<std::size_t>(b)][static_cast<std::size_t>(i)];
        if (entry < 0 || entry >= *l.num_blocks)
          ch.fail(fmt::format("layout.block_table[{}][{}]", b, i),
                  fmt::format("request {}'s logical block {} maps to block {}, outside the cache's num_blocks = {} "
                              "(accepted: 0 to {} for every block a context uses)",
                              b, i, entry, *l.num_blocks, *l.num_blocks - 1));
      }
  }
  const std::int64_t used = paged_blocks_used(c, keys);
  if (l.num_blocks && *l.num_blocks < used)
    ch.fail("layout.num_blocks", fmt::format("{} blocks are fewer than the {} the contexts take with fill = '{}' "
                                             "(accepted: at least {})",
                                             *l.num_blocks, used, to_string(l.fill), used));
  if (l.fill == paged_fill::shared_prefix && l.shared_blocks > max_blocks)
    ch.fail("layout.shared_blocks", fmt::format("{} shared blocks do not fit a block table of max_blocks = {} columns",
                                                l.shared_blocks, max_blocks));
  const std::int64_t num_blocks = l.num_blocks.value_or(used + batch);
  const std::int64_t page = l.page_bytes.value_or(payload);
  if (num_blocks > kMaxCacheBytes / page)
    ch.fail(l.num_blocks ? "layout.num_blocks" : "n",
            fmt::format("a cache of {} blocks x {} bytes is too large (accepted: at most 2^34 bytes)", num_blocks, page));
}

using layout_check = void (*)(const checker&);

// Indexed by layout_kind.
constexpr std::array<layout_check, 8> kLayoutChecks{
    [](const checker& ch) { check_causal_shape(ch, "causal"); },
    check_packed,
    check_context_parallel,
    check_sliding,
    check_compressed,
    [](const checker&) {},  // random: every n and m works
    check_explicit,
    check_paged,
};

// e2m1fn operands carry a ue8m0 scale per 32 elements of head_dim, as DeepGEMM's
// per_token_cast_to_fp4 (use_ue8m0 = True, gran_k = 32) makes them.
void check_block_scaled(const checker& ch) {
  const case_spec& c = ch.c;
  for (const auto& [f, kind, format_key, scale_key] :
       {std::tuple{c.q_format, c.q_scale, "q_format", "q_scale"}, std::tuple{c.k_format, c.k_scale, "k_format", "k_scale"}}) {
    if (f != fp8::format::e2m1fn) continue;
    // A paged fp4 cache keeps no float32 scale per key (reference/paged/problem.hpp): nothing for
    // the k_scale specials to plant.
    if (format_key == std::string_view("k_format") && c.layout.kind == layout_kind::paged)
      for (const special_value v : c.specials)
        if (is_k_scale_special(v))
          ch.fail("special", fmt::format("a paged e2m1fn cache has no float32 k_scale for {} to plant (accepted: the "
                                         "value specials)",
                                         to_string(v)));
    if (c.head_dim % 32 != 0)
      ch.fail("head_dim", fmt::format("{} = e2m1fn takes a scale per 32 elements: head_dim = {} is not a multiple of 32",
                                      format_key, c.head_dim));
    if (kind != scale_kind::ue8m0)
      ch.fail(ch.given(scale_key) ? scale_key : format_key,
              fmt::format("{} = e2m1fn takes ue8m0 block scales (accepted: {} = \"ue8m0\")", format_key, scale_key));
  }
}

}  // namespace

void validate(const case_spec& c, const key_sources& sources) {
  const checker ch{c, sources};
  check_size(ch, "n", "m x n (reference)", c.m, c.n);
  check_size(ch, "heads", "m x heads x head_dim (q)", c.m, c.heads, c.head_dim);
  if (c.layout.kind != layout_kind::paged) check_size(ch, "head_dim", "n x head_dim (k)", c.n, c.head_dim);
  check_conversions(ch);
  check_block_scaled(ch);
  // The scale divides by the bound in float32 (quantize.hpp): it must be a normal float there.
  if (c.bound && !(*c.bound >= 0x1p-126 && *c.bound <= 0x1p127))
    ch.fail("bound", fmt::format("{} is outside the float32 range a scale can divide by (accepted: 2^-126 to 2^127)",
                                 *c.bound));
  if (c.topk && *c.topk > c.n)
    ch.fail("topk", fmt::format("{} exceeds n = {} (accepted: 1 to n)", *c.topk, c.n));
  kLayoutChecks[static_cast<std::size_t>(c.layout.kind)](ch);
}

}  // namespace mqa::cases
