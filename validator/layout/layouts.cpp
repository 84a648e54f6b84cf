// One function per layout kind, in a table indexed by the kind. Each writes ks/ke for a case
// that cases::validate accepted, so every window here lies in [0, n] with ks <= ke; the
// out-of-range rows a case may ask for are planted afterwards (out_of_range.cpp).
#include <algorithm>
#include <array>
#include <numeric>

#include "layout.hpp"
#include "out_of_range.hpp"
#include "paged.hpp"
#include "validator/rng/rng.hpp"

namespace mqa::layout {
namespace {

using cases::case_spec;
using inputs::counter_rng;
using inputs::stream;

std::int32_t to_i32(std::int64_t v) { return static_cast<std::int32_t>(v); }

windows sized(const case_spec& c) {
  windows w;
  w.ks.assign(static_cast<std::size_t>(c.m), 0);
  w.ke.assign(static_cast<std::size_t>(c.m), 0);
  return w;
}

// One sequence whose last m tokens are the queries: row i is token n - m + i and sees every key
// up to and including itself.
windows causal(const case_spec& c) {
  windows w = sized(c);
  for (std::int64_t i = 0; i < c.m; ++i) w.ke[i] = to_i32(c.n - c.m + i + 1);
  return w;
}

// As causal, but only the last `window` keys.
windows sliding(const case_spec& c) {
  windows w = causal(c);
  for (std::int64_t i = 0; i < c.m; ++i) w.ks[i] = to_i32(std::max<std::int64_t>(0, w.ke[i] - c.layout.window));
  return w;
}

// `total` split into `parts` non-negative integers: sorted uniform cut points in [0, total].
std::vector<std::int64_t> split(std::int64_t total, std::int64_t parts, const counter_rng& rng) {
  std::vector<std::int64_t> cuts{0, total};
  for (std::int64_t r = 0; r + 1 < parts; ++r)
    cuts.push_back(static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(r), static_cast<std::uint64_t>(total) + 1)));
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::int64_t> out;
  for (std::size_t r = 1; r < cuts.size(); ++r) out.push_back(cuts[r] - cuts[r - 1]);
  return out;
}

// Chunked prefill packs a ragged batch: request r owns query rows [row_r, row_r + q_r) and keys
// [key_r, key_r + c_r), its own context of c_r >= q_r tokens, and its rows are the context's
// last q_r tokens, causal within it. No row sees another request's keys.
windows packed(const case_spec& c) {
  std::vector<std::int64_t> rows = c.layout.query_lengths, keys = c.layout.context_lengths;
  if (c.layout.requests > 0) {
    const counter_rng rng(c.seed, stream::packing);
    // Every request has at least one row; the keys beyond the rows go to requests at random.
    rows = split(c.m - c.layout.requests, c.layout.requests, rng.fork(0));
    for (auto& r : rows) r += 1;
    keys = split(c.n - c.m, c.layout.requests, rng.fork(1));
    for (std::size_t r = 0; r < keys.size(); ++r) keys[r] += rows[r];
  }
  windows w = sized(c);
  std::int64_t row = 0, key = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::int64_t t = 0; t < rows[r]; ++t, ++row) {
      w.ks[row] = to_i32(key);
      w.ke[row] = to_i32(key + keys[r] - rows[r] + t + 1);
    }
    key += keys[r];
  }
  return w;
}

// DeepGEMM tests/test_attention.py generate_cp_test_data: the sequence of n = 2 * cp_size * chunk
// keys is cut into 2 * cp_size chunks and rank r holds query chunks r and 2 * cp_size - 1 - r
// (load balancing: an early and a late chunk). Row t of a chunk sees keys [0, chunk_start + t),
// without itself, exactly as DeepGEMM writes it, so rank 0's first row is empty.
windows context_parallel(const case_spec& c) {
  windows w = sized(c);
  const std::int64_t chunk = c.m / 2, cp_size = c.n / c.m;
  const std::int64_t rank = c.layout.cp_rank.value_or(cases::default_cp_rank(c.m, c.n));
  for (std::int64_t t = 0; t < chunk; ++t) {
    w.ke[t] = to_i32(rank * chunk + t);
    w.ke[chunk + t] = to_i32((2 * cp_size - 1 - rank) * chunk + t);
  }
  return w;
}

// DeepSeek-V4 compressed indexer: every `ratio` tokens become one key, so the token at position
// p sees the keys [start, start + (p + 1) / ratio); rows before the first full group are empty.
windows compressed(const case_spec& c) {
  windows w = sized(c);
  const auto& l = c.layout;
  for (std::int64_t i = 0; i < c.m; ++i) {
    w.ks[i] = to_i32(l.start);
    w.ke[i] = to_i32(l.start + (l.first_position + i + 1) / l.ratio);
  }
  return w;
}

// Any window at all: starts anywhere (mostly not 4-aligned, BUGCLASSES 14), and a share of
// empty rows (ks == ke, at a random place; BUGCLASSES 13).
windows random(const case_spec& c) {
  windows w = sized(c);
  const counter_rng rng(c.seed, stream::layout);
  const auto points = static_cast<std::uint64_t>(c.n) + 1;
  for (std::int64_t i = 0; i < c.m; ++i) {
    const auto row = static_cast<std::uint64_t>(i);
    const auto a = static_cast<std::int64_t>(rng.below(3 * row, points));
    if (rng.chance(3 * row + 1, c.layout.empty_fraction)) {
      w.ks[i] = w.ke[i] = to_i32(a);
      continue;
    }
    auto b = static_cast<std::int64_t>(rng.below(3 * row + 2, points - 1));  // any point but a
    if (b >= a) ++b;
    w.ks[i] = to_i32(std::min(a, b));
    w.ke[i] = to_i32(std::max(a, b));
  }
  return w;
}

windows explicit_windows(const case_spec& c) {
  windows w;
  for (const auto v : c.layout.ks) w.ks.push_back(to_i32(v));
  for (const auto v : c.layout.ke) w.ke.push_back(to_i32(v));
  return w;
}

windows paged(const case_spec& c) { return make_paged_layout(c).rows; }

using maker = windows (*)(const case_spec&);

// Indexed by cases::layout_kind.
constexpr std::array<maker, 8> kMakers{causal,     packed, context_parallel, sliding,
                                       compressed, random, explicit_windows, paged};

struct clamped {
  std::int64_t begin, end;
};
clamped clamp(const windows& w, std::size_t i, std::int64_t n) {
  return {std::max<std::int64_t>(w.ks[i], 0), std::min<std::int64_t>(w.ke[i], n)};
}

}  // namespace

windows make_windows(const cases::case_spec& c) {
  windows w = kMakers[static_cast<std::size_t>(c.layout.kind)](c);
  if (c.layout.out_of_range && c.layout.kind != cases::layout_kind::explicit_windows) plant_out_of_range(c, w);
  return w;
}

std::int64_t empty_rows(const windows& w, std::int64_t n) {
  std::int64_t count = 0;
  for (std::size_t i = 0; i < w.ks.size(); ++i) {
    const auto [begin, end] = clamp(w, i, n);
    count += end <= begin;
  }
  return count;
}

std::int64_t longest_window(const windows& w, std::int64_t n) {
  std::int64_t longest = 0;
  for (std::size_t i = 0; i < w.ks.size(); ++i) {
    const auto [begin, end] = clamp(w, i, n);
    longest = std::max(longest, end - begin);
  }
  return longest;
}

std::int64_t default_topk(const windows& w, std::int64_t n) {
  return std::max<std::int64_t>(1, std::min<std::int64_t>(2048, longest_window(w, n)));
}

}  // namespace mqa::layout
