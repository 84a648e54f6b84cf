#include "paged.hpp"

#include <numeric>

#include "reference/paged/problem.hpp"
#include "validator/case/paged.hpp"
#include "validator/rng/rng.hpp"

namespace mqa::layout {
namespace {

using cases::case_spec;
using inputs::counter_rng;

// Fisher-Yates over [0, count) from the case's table stream: the same pool on every platform.
std::vector<std::int32_t> shuffled_pool(const case_spec& c, std::int64_t count) {
  std::vector<std::int32_t> pool(static_cast<std::size_t>(count));
  std::iota(pool.begin(), pool.end(), 0);
  const counter_rng rng = counter_rng(c.seed, inputs::stream::paged_table).fork(0);
  for (std::int64_t i = count - 1; i > 0; --i) {
    const auto j = static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(i) + 1));
    std::swap(pool[static_cast<std::size_t>(i)], pool[j]);
  }
  return pool;
}

std::vector<std::int32_t> made_table(const case_spec& c, const std::vector<std::int64_t>& request_keys,
                                     std::int64_t max_blocks, std::int64_t num_blocks) {
  const cases::layout_spec& l = c.layout;
  const auto batch = static_cast<std::int64_t>(request_keys.size());
  std::vector<std::int32_t> pool(static_cast<std::size_t>(num_blocks));
  if (l.fill == cases::paged_fill::sequential) std::iota(pool.begin(), pool.end(), 0);
  else pool = shuffled_pool(c, num_blocks);
  const std::int64_t shared = l.fill == cases::paged_fill::shared_prefix ? l.shared_blocks : 0;
  const counter_rng stale = counter_rng(c.seed, inputs::stream::paged_table).fork(1);
  std::vector<std::int32_t> table(static_cast<std::size_t>(batch * max_blocks));
  std::int64_t next = shared;  // the pool's first `shared` blocks are the shared prefix
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t used = cases::blocks_for(request_keys[static_cast<std::size_t>(b)], l.block_kv);
    for (std::int64_t i = 0; i < max_blocks; ++i) {
      std::int32_t& entry = table[static_cast<std::size_t>(b * max_blocks + i)];
      if (i < used) {
        entry = pool[static_cast<std::size_t>(i < shared ? i : next++)];
        continue;
      }
      switch (l.unused_entries) {
        case cases::unused_entry::zero: entry = 0; break;
        case cases::unused_entry::minus_one: entry = -1; break;
        case cases::unused_entry::stale:
          entry = static_cast<std::int32_t>(stale.below(static_cast<std::uint64_t>(b * max_blocks + i),
                                                        static_cast<std::uint64_t>(num_blocks)));
          break;
      }
    }
  }
  return table;
}

}  // namespace

paged_layout make_paged_layout(const case_spec& c) {
  const cases::layout_spec& l = c.layout;
  paged_layout out;
  out.batch = cases::paged_batch(c);
  out.max_blocks = l.max_blocks.value_or(cases::default_max_blocks(c));
  out.num_blocks = l.num_blocks.value_or(cases::default_num_blocks(c));
  const std::vector<std::int64_t> lens = cases::paged_context_lens(c);
  for (const auto v : lens) out.context_lens.push_back(static_cast<std::int32_t>(v));
  if (!l.block_table.empty()) {
    for (const auto& row : l.block_table)
      for (const auto v : row) out.block_table.push_back(static_cast<std::int32_t>(v));
  } else {
    out.block_table = made_table(c, cases::paged_request_keys(c, lens), out.max_blocks, out.num_blocks);
  }
  // The windows by the operation's own rule (reference/paged/problem.hpp).
  paged::problem p;
  p.batch = out.batch;
  p.next_n = l.next_n;
  p.max_context = c.n;
  p.context_lens_2d = l.context_lens_2d;
  p.context_lens = out.context_lens;
  const paged::row_windows w = paged::windows_of(p);
  out.rows = {w.ks, w.ke};
  return out;
}

}  // namespace mqa::layout
