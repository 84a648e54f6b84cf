// A block's work together on the device: its shared scratch, sums and maxima over its threads,
// the k-th largest of a set of keys by radix selection (topk.cpp's select_largest) and the k
// largest marked in a bitset, and where a warp may use the hardware's own collectives. Device code
// only; element_judge.hip includes it.
#pragma once

#include <cstdint>

#include "reference/gpu/hip_compat.hpp"
#include "validator/compare/device/element_rules.hpp"
#include "validator/compare/device/judge_args.hpp"

namespace mqa::compare::device {
namespace {  // private to element_judge.hip, the one file that includes this header

constexpr int kThreads = 512;
static_assert(kThreads >= 256, "select_largest gives each of a radix pass's 256 digits a thread");

// The block's shared scratch, for both kernels: a judgement's histograms and heat-map row, the
// reductions' and the radix selection's room, and the band's key count (band_tally).
struct shared_state {
  unsigned hist_ulps[kUlpBuckets], hist_magnitude[kUlpBuckets], hist_conditioned[kUlpBuckets];
  unsigned long long heat[128];
  unsigned radix[256];
  long long scan[kThreads];
  double values[kThreads];
  long long cols[kThreads];
  unsigned long long chosen_prefix;
  long long chosen_rank, chosen_count;
  unsigned band_count;  // the output's keys within the row's band (band_tally)
};

__device__ long long block_sum(shared_state& sh, long long v) {
  __syncthreads();
  sh.scan[threadIdx.x] = v;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (static_cast<int>(threadIdx.x) < step) sh.scan[threadIdx.x] += sh.scan[threadIdx.x + step];
    __syncthreads();
  }
  const long long total = sh.scan[0];
  __syncthreads();
  return total;
}

// The largest value by std::max's rule (a NaN never replaces): NaN-free inputs and -inf start.
__device__ double block_max(shared_state& sh, double v) {
  __syncthreads();
  sh.values[threadIdx.x] = v;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (static_cast<int>(threadIdx.x) < step) sh.values[threadIdx.x] = max_of(sh.values[threadIdx.x], sh.values[threadIdx.x + step]);
    __syncthreads();
  }
  const double m = sh.values[0];
  __syncthreads();
  return m;
}

// The largest ratio, at its lowest key (col -1: none).
__device__ void block_worst(shared_state& sh, double& ratio, long long& col) {
  __syncthreads();
  sh.values[threadIdx.x] = ratio;
  sh.cols[threadIdx.x] = col;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    const int t = static_cast<int>(threadIdx.x);
    if (t < step) {
      const double r2 = sh.values[t + step];
      const long long c2 = sh.cols[t + step];
      const double r1 = sh.values[t];
      const long long c1 = sh.cols[t];
      if (c2 >= 0 && (c1 < 0 || r2 > r1 || (r2 == r1 && c2 < c1))) sh.values[t] = r2, sh.cols[t] = c2;
    }
    __syncthreads();
  }
  ratio = sh.values[0];
  col = sh.cols[0];
  __syncthreads();
}

// The k-th largest key among positions [0, count) (topk.cpp's select_largest, digit by digit
// from the top): the key T, how many keys equal to T belong to the k largest, and how many keys
// equal T (the last digit's count). Where every key is known to share its `shared_bytes` leading
// bytes with `like`, the digits start below them.
template <class Key, int Bits, class KeyAt>
__device__ void select_largest(shared_state& sh, KeyAt key_at, long long count, long long k, Key& threshold,
                               long long& take, long long& equal, int shared_bytes = 0, Key like = 0) {
  if (shared_bytes * 8 >= Bits) {  // every key is `like`
    threshold = like, take = k, equal = count;
    return;
  }
  const Key shared_mask = shared_bytes > 0 ? static_cast<Key>(~Key{0} << (Bits - 8 * shared_bytes)) : Key{0};
  Key prefix = like & shared_mask, known = shared_mask;
  long long rank = k;
  for (int shift = Bits - 8 - 8 * shared_bytes; shift >= 0; shift -= 8) {
    for (int d = threadIdx.x; d < 256; d += kThreads) sh.radix[d] = 0;
    __syncthreads();
    for (long long p = threadIdx.x; p < count; p += kThreads) {
      const Key key = key_at(p);
      if ((key & known) == prefix) atomicAdd(&sh.radix[(key >> shift) & 0xFF], 1u);
    }
    // The digit holding the rank-th largest key: each of 256 threads holds one digit's count of
    // keys at that digit or above (a suffix sum in log2(256) steps), and the one digit whose range
    // of ranks holds `rank` is chosen (rank <= count of keys at or above it, > count above it).
    __syncthreads();
    const int t = static_cast<int>(threadIdx.x);
    if (t < 256) sh.scan[t] = sh.radix[t];
    __syncthreads();
    for (int step = 1; step < 256; step *= 2) {
      const long long add = t + step < 256 ? sh.scan[t + step] : 0;
      __syncthreads();
      if (t < 256) sh.scan[t] += add;
      __syncthreads();
    }
    if (t < 256) {
      const long long at_or_above = sh.scan[t], above = at_or_above - static_cast<long long>(sh.radix[t]);
      if (above < rank && rank <= at_or_above) {
        sh.chosen_prefix = static_cast<unsigned long long>(prefix | static_cast<Key>(t) << shift);
        sh.chosen_rank = rank - above;
        sh.chosen_count = sh.radix[t];
      }
    }
    __syncthreads();
    prefix = static_cast<Key>(sh.chosen_prefix);
    rank = sh.chosen_rank;
    known |= static_cast<Key>(0xFF) << shift;
    __syncthreads();
  }
  threshold = prefix;
  take = rank;
  equal = sh.chosen_count;
}

// Marks in `set` (a bitset over keys) the k largest of positions [0, count), ties to the lower
// position: every key above the threshold and the first `take` equal to it.
template <class KeyAt, class KeyOf>
__device__ void mark_largest(shared_state& sh, KeyAt key_at, KeyOf key_of, long long count, long long k,
                             unsigned* set) {
  std::uint32_t threshold = 0;
  long long take = 0, equal = 0;
  select_largest<std::uint32_t, 32>(sh, key_at, count, k, threshold, take, equal);
  if (take == equal) {
    // Every key equal to the threshold is kept (no ties to break, the usual case): one pass, each
    // thread reading positions a block apart, so a warp reads neighbouring positions.
    for (long long p = threadIdx.x; p < count; p += kThreads)
      if (key_at(p) >= threshold) {
        const long long j = key_of(p);
        atomicOr(&set[j / 32], 1u << (j % 32));
      }
    __syncthreads();
    return;
  }
  // Ties broken by position: each thread counts its own run of positions' ties, then keeps its
  // share of `take` in order.
  const long long chunk = (count + kThreads - 1) / kThreads;
  const long long first = chunk * threadIdx.x, last = first + chunk < count ? first + chunk : count;
  long long ties = 0;
  for (long long p = first; p < last; ++p) ties += key_at(p) == threshold;
  __syncthreads();
  sh.scan[threadIdx.x] = ties;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long before = 0;
    for (int t = 0; t < kThreads; ++t) {
      const long long here = sh.scan[t];
      sh.scan[t] = before;
      before += here;
    }
  }
  __syncthreads();
  long long before = sh.scan[threadIdx.x];
  for (long long p = first; p < last; ++p) {
    const std::uint32_t key = key_at(p);
    bool kept = key > threshold;
    if (key == threshold) kept = before++ < take;
    if (kept) {
      const long long j = key_of(p);
      atomicOr(&set[j / 32], 1u << (j % 32));
    }
  }
  __syncthreads();
}

__device__ bool in_set(const unsigned* set, long long j) { return (set[j / 32] >> (j % 32)) & 1u; }

// A warp's lanes in the hardware's own collectives (ballots and reductions), where the judging
// uses them: CUDA at compute capability 8.0 or above. Elsewhere (HIP, whose 64-lane wavefronts the
// judging's warp code is not written for, and older NVIDIA devices) every lane does its own share through
// shared-memory atomics, with the same results.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define MQA_WARP_COLLECTIVES 1
constexpr unsigned kAllLanes = 0xFFFFFFFFu;
__device__ unsigned lane_index() { return threadIdx.x % 32; }
#else
#define MQA_WARP_COLLECTIVES 0
#endif

// A block steps through a row kThreads keys at a time, thread t at key base + t; with kThreads a
// multiple of 32, a warp's 32 keys are one word of a row's bitset, lane l at bit l.
static_assert(kThreads % 32 == 0, "a warp's keys are one bitset word");

}  // namespace
}  // namespace mqa::compare::device
