#include "topk.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <vector>

#include "reference/exact/logits.hpp"
#include "reference/fp8/bfloat16.hpp"

namespace mqa::kernels::cpu {
namespace {

// The ranking as one unsigned order, as vLLM's radix top-k orders float bits: negatives flipped,
// -0 as +0, every NaN above +inf (torch.topk's rule), or below -inf under the nan_lowest bug.
std::uint32_t topk_rank_of(float x, bool nan_lowest) {
  if (std::isnan(x)) return nan_lowest ? 0u : 0xFFFFFFFFu;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x == 0.0f ? 0.0f : x);
  // The least non-NaN rank, -inf's ~0xFF800000 = 0x007FFFFF, is above 0: 0 stays the NaN-lowest rank alone.
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

}  // namespace

void select_topk(const topk_config& config, const exact::problem& p, const output_view& logits,
                 const indices_view& out) {
  std::vector<std::int64_t> keys;
  std::vector<std::uint32_t> ranks;
  for (std::int64_t i = 0; i < p.m; ++i) {
    std::int64_t* row = out.row(i);
    std::fill(row, row + out.k, std::int64_t{-1});
    const std::int64_t ks = std::clamp<std::int64_t>(p.ks[i], 0, p.n);
    std::int64_t ke = std::clamp<std::int64_t>(p.ke[i], 0, p.n);
    if (config.one_past_end && ke < p.n && ke > ks) ++ke;
    if (ke <= ks) continue;
    keys.resize(static_cast<std::size_t>(ke - ks));
    std::iota(keys.begin(), keys.end(), ks);
    ranks.resize(keys.size());
    const float* values = logits.row(i);
    for (std::size_t t = 0; t < keys.size(); ++t) {
      const float x = values[keys[t]];
      ranks[t] = topk_rank_of(config.bf16_ranked ? fp8::round_to_bfloat16(x) : x, config.nan_lowest);
    }
    const auto k = std::min<std::int64_t>(out.k, ke - ks);
    // Descending by rank, ties to the lower key (a stable order over ascending keys).
    std::vector<std::size_t> order(keys.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ranks[a] > ranks[b]; });
    const std::int64_t base = config.relative_as_absolute ? ks : 0;
    for (std::int64_t t = 0; t < k; ++t) row[t] = keys[order[static_cast<std::size_t>(t)]] - base;
    if (config.ascending) std::reverse(row, row + k);
    if (config.duplicate_first && k >= 2) row[k - 1] = row[0];
    if (config.no_padding)
      for (std::int64_t t = k; t < out.k; ++t) row[t] = ks;
  }
}

}  // namespace mqa::kernels::cpu
