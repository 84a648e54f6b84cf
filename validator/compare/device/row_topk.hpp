// One judged row's top-k on the device: the row as both kernels read it (row_context: its window,
// references and the intervals keys are ranked by), the band tally a judgement keeps while it reads
// the row, the top-k settled from the band where it can be, and the selection over the whole row
// where it cannot (topk::compare_sets' rule either way). Device code only; element_judge.hip
// includes it.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "reference/gpu/hip_compat.hpp"
#include "validator/compare/device/block_reduce.hpp"
#include "validator/compare/device/element_rules.hpp"
#include "validator/compare/device/judge_args.hpp"

namespace mqa::compare::device {
namespace {  // private to element_judge.hip, the one file that includes this header

struct interval {
  double lower, upper;
};
// topk::interval_of (reference/topk/interval.hpp), rule for rule: never a NaN end.
__device__ interval interval_of(double exact, double allowance) {
  if (isnan(exact)) return {INFINITY, INFINITY};
  if (isnan(allowance) || isinf(allowance)) return {-INFINITY, DBL_MAX};
  if (exact == INFINITY) return {DBL_MAX, DBL_MAX};
  const double upper = exact + allowance;
  return {exact - allowance, upper < DBL_MAX ? upper : DBL_MAX};
}

// One judged row as both kernels read it: its window and references, and each key's interval as
// the top-k judging ranks it (compare_sets' and decide's: the ranked centre, the allowance, +inf
// where an overflow is excused).
struct row_context {
  const judge_args& a;
  row_entry w;
  long long r, i, b, e;
  const float *reference, *centre, *reference_bf16, *centre_bf16, *ranked_centre;
  double* allowances;  // judge_args::allowances' row
  std::uint16_t* ulp_scales;

  __device__ row_context(const judge_args& args, long long row) : a(args), w(args.row_table[row]), r(row) {
    const long long n = a.n;
    i = w.i, b = w.begin, e = w.end;
    reference = a.reference + r * n;
    centre = a.centre + r * n;
    reference_bf16 = a.bf16 ? a.reference_bf16 + r * n : nullptr;
    centre_bf16 = a.bf16 ? a.centre_bf16 + r * n : nullptr;
    allowances = a.allowances + r * n;
    ulp_scales = a.ulp_scales + r * n;
    ranked_centre = a.bf16 && a.bound.bit_exact ? centre_bf16 : centre;
  }
  // An in-window element's allowance, once prepare_rows has stored it.
  __device__ allowance allowance_of(long long j) const { return allowance_of_code(allowances[j]); }
  // prepare_rows' first look at an in-window element: its allowance computed from its magnitude,
  // which is then replaced by the allowance (and its ulp scale stored). Returns the allowance.
  __device__ allowance store_allowance(long long j) const {
    const double magnitude = allowances[j];
    const allowance al = allowance_at(a, w, j, centre[j], magnitude);
    ulp_scales[j] = ulp_scale_code(magnitude, reference[j], a.bf16);
    allowances[j] = allowance_code(al);
    return al;
  }
  // Key j's interval as topk::compare_sets ranks it: of its ranked centre and its allowance (+inf
  // where an overflow is excused); outside the window of -inf and 0.
  __device__ interval key_interval(long long j) const {
    if (j < b || j >= e) return interval_of(-INFINITY, 0);
    return in_window_interval(ranked_centre[j], allowance_of(j));
  }
  // The same for an in-window key whose ranked centre `x` and allowance are at hand.
  __device__ static interval in_window_interval(float x, const allowance& al) {
    return interval_of(static_cast<double>(x), al.may_overflow ? INFINITY : al.allowed);
  }
  // The lowest and the highest key (rank_key) an output element at key j may have and pass
  // judge_kernel's element checks: the centre's own key where the contract is bit-exact or the
  // centre is infinite, any where an overflow is excused, and otherwise the floats within the
  // allowance, one float further out on each side (which covers the roundings of centre +-
  // allowance to double and then to float).
  struct key_range {
    std::uint32_t low, high;
  };
  __device__ key_range passing_keys(long long j) const {
    if (isnan(centre[j])) return {0xFFFFFFFFu, 0xFFFFFFFFu};
    const float x = ranked_centre[j];
    if (a.bound.bit_exact || isinf(x)) return {rank_key(x), rank_key(x)};
    const allowance al = allowance_of(j);
    if (al.may_overflow || isnan(al.allowed)) return {rank_key(-INFINITY), rank_key(INFINITY)};
    const float low = nextafterf(static_cast<float>(static_cast<double>(x) - al.allowed), -INFINITY);
    const float high = nextafterf(static_cast<float>(static_cast<double>(x) + al.allowed), INFINITY);
    return {rank_key(low), rank_key(high)};
  }
};

// What the top-k judging finds on one row: the kernel's set's overlap with the exact one, and its
// keys not excused by topk::compare_sets' rule (a topk-mismatch finding each).
struct topk_measure {
  long long intruders = 0, overlap = 0;
};


// One thread's share of a row's ranked keys against the row's band, tallied while the elements
// are read: above the band, how many, how many of them the exact set holds, and their intervals'
// least upper end; in the band, the key and its entry kept (in the block's scratch, room for a
// whole row); below it, the greatest lower end.
struct band_tally {
  // A band key's entry: its column (below 2^31, judge_args::n) and, in bit 31, whether the exact
  // set holds it.
  static constexpr std::uint32_t kExactBit = 1u << 31;
  __device__ static long long column_of(std::uint32_t entry) { return entry & ~kExactBit; }
  __device__ static long long exact_of(std::uint32_t entry) { return entry >> 31; }

  std::uint32_t low, high;
  std::uint32_t *keys, *entries;
  long long above = 0, above_exact = 0;
  double above_least_upper = INFINITY;
  double below_greatest_lower = -INFINITY;

  // Called by every thread of the block at each step (`ranked`: whether key j is one, j < n;
  // `v`: its interval; `exact_word`: the exact set's word that holds key j).
  __device__ void rank(shared_state& sh, bool ranked, std::uint32_t key, int j, const interval& v, unsigned exact_word) {
    const bool is_above = ranked && key > high, in_band = ranked && !is_above && key >= low;
    if (is_above) {
      ++above;
      above_least_upper = min_of(above_least_upper, v.upper);
    } else if (ranked && !in_band) {
      below_greatest_lower = max_of(below_greatest_lower, v.lower);
    }
#if MQA_WARP_COLLECTIVES
    // The warp's keys above the band against the exact set's word for them, counted once; its
    // keys in the band given consecutive slots by one atomic.
    const unsigned lane = lane_index();
    const unsigned above_lanes = __ballot_sync(kAllLanes, is_above);
    if (lane == 0) above_exact += __popc(above_lanes & exact_word);
    const unsigned band_lanes = __ballot_sync(kAllLanes, in_band);
    if (band_lanes == 0) return;
    const int leader = __ffs(static_cast<int>(band_lanes)) - 1;
    unsigned first = 0;
    if (static_cast<int>(lane) == leader) first = atomicAdd(&sh.band_count, static_cast<unsigned>(__popc(band_lanes)));
    first = __shfl_sync(kAllLanes, first, leader);
    if (!in_band) return;
    const unsigned slot = first + static_cast<unsigned>(__popc(band_lanes & ((1u << lane) - 1)));
#else
    if (is_above) above_exact += (exact_word >> (j % 32)) & 1u;
    if (!in_band) return;
    const unsigned slot = atomicAdd(&sh.band_count, 1u);
#endif
    keys[slot] = key;
    entries[slot] = static_cast<std::uint32_t>(j) | (((exact_word >> (j % 32)) & 1u) << 31);
  }
};

// Whether the band settles the row, and if so what it measures. Where fewer than k ranked keys lie
// above the band and at least k at or above its low end, the k-th largest key is the
// (k - above)-th largest in the band, whatever the band's guess was. Without a tie at that
// threshold (ties go by position, which the band does not keep) the kernel's set is every key at
// or above it: the keys above the band and the band's above the threshold. Its intruders are then
// counted in the band; above the band only their least upper end was kept, so where that end is
// below the highest dropped lower end the row is left to the whole row's selection.
__device__ bool topk_from_band(shared_state& sh, const row_context& row, long long k, const band_tally& t,
                               topk_measure& m) {
  const long long above = block_sum(sh, t.above);
  const long long in_band = sh.band_count;  // after block_sum's barriers
  if (k <= 0 || above >= k || k > above + in_band) return false;
  std::uint32_t threshold = 0;
  long long take = 0, equal = 0;
  // The band's keys share the leading bytes its ends share: the selection starts below them.
  int shared_bytes = 0;
  while (shared_bytes < 4 && ((t.low ^ t.high) >> (24 - 8 * shared_bytes)) == 0) ++shared_bytes;
  select_largest<std::uint32_t, 32>(sh, [&](long long p) { return t.keys[p]; }, in_band, k - above, threshold, take,
                                    equal, shared_bytes, t.low);
  if (take != equal) return false;
  long long kept_exact = t.above_exact;
  for (long long p = threadIdx.x; p < in_band; p += kThreads)
    if (t.keys[p] >= threshold) kept_exact += band_tally::exact_of(t.entries[p]);
  m.overlap = block_sum(sh, kept_exact);
  m.intruders = 0;
  if (m.overlap == k) return true;
  double highest_dropped = t.below_greatest_lower;
  for (long long p = threadIdx.x; p < in_band; p += kThreads) {
    if (t.keys[p] >= threshold) continue;
    highest_dropped = max_of(highest_dropped, row.key_interval(band_tally::column_of(t.entries[p])).lower);
  }
  highest_dropped = block_max(sh, highest_dropped);
  if (block_sum(sh, t.above_least_upper < highest_dropped) != 0) return false;
  long long intruders = 0;
  for (long long p = threadIdx.x; p < in_band; p += kThreads) {
    if (t.keys[p] < threshold) continue;
    intruders += row.key_interval(band_tally::column_of(t.entries[p])).upper < highest_dropped;
  }
  m.intruders = block_sum(sh, intruders);
  return true;
}

// The kernel's top k over every key a consumer ranks (the window first, then where the output is
// clean the rest, ties to the earlier), marked in `kernel_set` (a row's bitset of scratch) and
// measured against the exact set (topk::compare_sets).
template <class ActualAt>
__device__ topk_measure topk_by_selection(shared_state& sh, const row_context& row, ActualAt actual_at,
                                          const unsigned* exact_set, unsigned* kernel_set, long long k) {
  const long long n = row.a.n, words = (n + 31) / 32, b = row.b, width = row.e - row.b;
  for (long long x = threadIdx.x; x < words; x += kThreads) kernel_set[x] = 0;
  __syncthreads();
  const long long candidates = row.a.clean ? n : width;
  auto candidate_key = [&](long long p) -> long long {
    if (p < width) return b + p;
    return p - width < b ? p - width : p;
  };
  mark_largest(sh, [&](long long p) { return rank_key(actual_at(candidate_key(p))); }, candidate_key, candidates, k,
               kernel_set);
  topk_measure m;
  long long overlap = 0;
  for (long long x = threadIdx.x; x < words; x += kThreads) overlap += __popc(kernel_set[x] & exact_set[x]);
  m.overlap = block_sum(sh, overlap);
  if (m.overlap == k) return m;
  // A kernel set other than the exact one is excused where one threshold separates its kept keys'
  // upper ends from its dropped keys' lower ends.
  double highest_dropped = -INFINITY;
  for (long long p = threadIdx.x; p < candidates; p += kThreads) {
    const long long j = candidate_key(p);
    if (in_set(kernel_set, j)) continue;
    highest_dropped = max_of(highest_dropped, row.key_interval(j).lower);
  }
  highest_dropped = block_max(sh, highest_dropped);
  long long intruders = 0;
  for (long long p = threadIdx.x; p < candidates; p += kThreads) {
    const long long j = candidate_key(p);
    if (!in_set(kernel_set, j)) continue;
    intruders += row.key_interval(j).upper < highest_dropped;
  }
  m.intruders = block_sum(sh, intruders);
  return m;
}

}  // namespace
}  // namespace mqa::compare::device
