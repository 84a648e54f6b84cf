#include "paged.hpp"

#include <algorithm>

// The one generator of every seeded draw (a leaf header: it knows no case), so that validation
// sees the lengths the inputs will have.
#include "reference/paged/problem.hpp"
#include "validator/rng/rng.hpp"

namespace mqa::cases {

std::int64_t paged_batch(const case_spec& c) { return c.m / c.layout.next_n; }

std::vector<std::int64_t> paged_context_lens(const case_spec& c) {
  const layout_spec& l = c.layout;
  const std::int64_t batch = paged_batch(c);
  const inputs::counter_rng rng(c.seed, inputs::stream::paged_lengths);
  std::vector<std::int64_t> request(static_cast<std::size_t>(batch));
  const std::int64_t lo = l.context_min, hi = l.context_max.value_or(c.n);
  for (std::int64_t b = 0; b < batch; ++b)
    request[static_cast<std::size_t>(b)] =
        !l.context_lengths.empty()
            ? l.context_lengths[static_cast<std::size_t>(b)]
            : lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(b), static_cast<std::uint64_t>(hi - lo + 1)));
  if (!l.context_lens_2d) return request;
  const inputs::counter_rng rows = rng.fork(1);
  std::vector<std::int64_t> lens;
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t last = request[static_cast<std::size_t>(b)];
    for (std::int64_t t = 0; t + 1 < l.next_n; ++t)
      lens.push_back(static_cast<std::int64_t>(
          rows.below(static_cast<std::uint64_t>(b * l.next_n + t), static_cast<std::uint64_t>(last) + 1)));
    lens.push_back(last);
  }
  return lens;
}

std::vector<std::int64_t> paged_request_keys(const case_spec& c, const std::vector<std::int64_t>& context_lens) {
  if (!c.layout.context_lens_2d) return context_lens;
  std::vector<std::int64_t> keys;
  for (std::size_t at = 0; at < context_lens.size(); at += static_cast<std::size_t>(c.layout.next_n))
    keys.push_back(*std::max_element(context_lens.begin() + static_cast<std::ptrdiff_t>(at),
                                     context_lens.begin() + static_cast<std::ptrdiff_t>(at) + c.layout.next_n));
  return keys;
}

std::int64_t paged_blocks_used(const case_spec& c, const std::vector<std::int64_t>& request_keys) {
  const layout_spec& l = c.layout;
  std::int64_t used = 0;
  if (!l.block_table.empty()) {
    for (std::size_t b = 0; b < request_keys.size(); ++b)
      for (std::int64_t i = 0; i < blocks_for(request_keys[b], l.block_kv); ++i)
        used = std::max(used, l.block_table[b][static_cast<std::size_t>(i)] + 1);
    return used;
  }
  std::int64_t shared = 0;
  for (const std::int64_t keys : request_keys) {
    const std::int64_t blocks = blocks_for(keys, l.block_kv);
    if (l.fill == paged_fill::shared_prefix) {
      shared = std::max(shared, std::min(blocks, l.shared_blocks));
      used += std::max<std::int64_t>(0, blocks - l.shared_blocks);
    } else {
      used += blocks;
    }
  }
  return used + shared;
}

std::int64_t default_max_blocks(const case_spec& c) {
  if (!c.layout.block_table.empty()) return static_cast<std::int64_t>(c.layout.block_table.front().size());
  return std::max<std::int64_t>(1, blocks_for(c.n, c.layout.block_kv));
}

std::int64_t default_num_blocks(const case_spec& c) {
  const std::vector<std::int64_t> keys = paged_request_keys(c, paged_context_lens(c));
  return paged_blocks_used(c, keys) + paged_batch(c);
}

// The payload rounded up to a multiple of 4: the stride a case states must be one (the float32
// scales), so the default must be too, also where head_dim x block_kv is odd.
std::int64_t default_page_bytes(const case_spec& c) {
  const paged::key_bytes key = paged::key_bytes_of(c.k_format, c.head_dim);
  return (c.layout.block_kv * (key.codes + key.scale) + 3) / 4 * 4;
}

}  // namespace mqa::cases
