// The comparator's element work on the device. Once per upload of the references (prepare_kernel):
// each judged row's exact top-k set and topk::decide's counts, which need no output. Per output
// (judge_kernel): every judged element classified as compare::judge classifies it, its allowance
// computed as compare::allowance_at computes it (the same operations in the same order; built with
// -fmad=false so that none is fused), the ULP histograms, the worst error/bound and the heat map,
// and per row the kernel's top-k against the exact one (topk::compare_sets). The top-k is found
// while the row is read: an output that passes its allowances has its k-th largest key in a band
// the references fix beforehand (row_preparation::band_low..band_high), so only the band's keys
// are kept and selected; a row the band does not settle (a tie at the threshold, a threshold
// outside it) is selected over the whole row again. Every figure either returns is an integer
// count, a maximum or a value read off one element, so the order threads meet elements in changes
// none of them.
//
// It decides no finding: a row with any element a finding is made of is only counted
// (row_summary::findings), and the caller judges such an output on the host (device_comparator.hpp).
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "reference/gpu/hip_compat.hpp"
#include "reference/gpu/launch_check.hpp"
#include "validator/compare/device/judge_args.hpp"

namespace mqa::compare::device {
namespace {

constexpr int kThreads = 512;
static_assert(kThreads >= 256, "select_largest gives each of a radix pass's 256 digits a thread");
constexpr double kUp = 1 + 0x1p-50;  // allowance.cpp's upward rounding of a few products
constexpr int kExact = 1024, kPerOctave = 16;

__device__ std::uint32_t bits_of(float x) { return __float_as_uint(x); }
__device__ float float_of(std::uint32_t b) { return __uint_as_float(b); }
__device__ std::uint64_t bits_of(double x) { return static_cast<std::uint64_t>(__double_as_longlong(x)); }
__device__ double double_of(std::uint64_t b) { return __longlong_as_double(static_cast<long long>(b)); }

// compare::ulp_distance of two floats neither of which is a NaN (the only ones it is asked of):
// the difference of their orders, at most 2 * 0x7F800000, which 32 bits hold.
__device__ std::uint32_t ulp_distance(float a, float b) {
  const std::uint32_t x = bits_of(a), y = bits_of(b);
  const std::uint32_t mx = x & 0x7FFFFFFFu, my = y & 0x7FFFFFFFu;
  if ((x ^ y) >> 31) return mx + my;  // opposite signs: the orders are -mx and my (or mx and -my)
  return mx > my ? mx - my : my - mx;
}

// fp8::round_to_bfloat16 of a finite float: to nearest, ties to even.
__device__ float round_to_bfloat16(float x) {
  const std::uint32_t b = bits_of(x);
  const std::uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
  return float_of(rounded);
}

// compare::ulp_histogram's bucket of a distance: exact below kExact, then kPerOctave to an octave.
__device__ int bucket_of_octave(int octave, int sub) {
  const int b = kExact + (octave - 10) * kPerOctave + sub;
  return b < kUlpBuckets - 1 ? b : kUlpBuckets - 1;
}
__device__ int bucket_of(std::uint32_t ulps) {
  if (ulps < kExact) return static_cast<int>(ulps);
  const int octave = 31 - __clz(static_cast<int>(ulps));
  return bucket_of_octave(octave, static_cast<int>((ulps >> (octave - 4)) & (kPerOctave - 1)));
}
// The same of the integer a float64 holds (ceil's; +inf counts as any distance past the last
// bucket), read off its exponent and the fraction's leading bits without a conversion.
__device__ int bucket_of_integral(double units) {
  static_assert(kPerOctave == 16, "an octave's sixteenths are the fraction's four leading bits");
  if (units < kExact) return static_cast<int>(units);
  const std::uint64_t bits = bits_of(units);
  return bucket_of_octave(static_cast<int>(bits >> 52) - 1023, static_cast<int>((bits >> 48) & 15));
}

// 1 / compare::ulp_of_magnitude, exactly (a power of two, at most 2^149): the host's quotient by
// that power of two and the product by its reciprocal are the same real number, so both round to
// the same bits.
__device__ double reciprocal_ulp_of_magnitude(double magnitude, bool bfloat16) {
  const int stored = bfloat16 ? 7 : 23;
  const auto biased = static_cast<int>((bits_of(magnitude) >> 52) & 0x7FF);
  int e = biased - 1023;
  if (!(magnitude > 0) || biased == 0x7FF || e < -126) e = -126;
  return double_of(static_cast<std::uint64_t>(1023 - (e - stored)) << 52);
}

// compare::half_ulp.
__device__ double half_ulp(float x) {
  const std::uint32_t field = (bits_of(x) >> 23) & 0xFFu;
  if (field == 0xFFu) return 0;
  const int k = static_cast<int>(field < 1 ? 1 : field) - 151;
  return double_of(static_cast<std::uint64_t>(k + 1023) << 52);
}

__device__ double max_of(double a, double b) { return a < b ? b : a; }  // std::max(a, b)
__device__ double min_of(double a, double b) { return b < a ? b : a; }  // std::min(a, b)

// error_bound::largest_intermediate, as allowance.cpp's lanes evaluate it.
__device__ double largest_intermediate(const bound_constants& b, double magnitude, double unscaled,
                                       double scaled_weight_max, double scaled_dot_max) {
  const double grown = 1 + b.relative;
  double largest = magnitude * grown;
  switch (b.scale) {
    case bound_constants::placement::after_head_sum:
      largest = max_of(max_of(largest, unscaled * grown), scaled_weight_max * grown);
      break;
    case bound_constants::placement::into_weights: largest = max_of(largest, scaled_weight_max * grown); break;
    case bound_constants::placement::into_dots:
      largest = max_of(largest, scaled_dot_max * (1 + b.dot_relative) * (1 + 0x1p-7));
      break;
  }
  return largest * (1 + 0x1p-50);
}

struct allowance {
  double allowed;
  bool may_overflow;
};

// judge_args::allowances' form of an allowance: its bits, negated where an overflow is excused
// (-0 for an allowance of 0).
__device__ double allowance_code(const allowance& al) { return al.may_overflow ? -al.allowed : al.allowed; }
__device__ allowance allowance_of_code(double code) { return {fabs(code), static_cast<bool>(signbit(code))}; }

// judge_args::ulp_scales' form of an element's magnitude A against its exact logit.
__device__ std::uint16_t ulp_scale_code(double magnitude, float exact, bool bfloat16) {
  const auto field = static_cast<std::uint16_t>(bits_of(reciprocal_ulp_of_magnitude(magnitude, bfloat16)) >> 52);
  const bool conditioned = fabs(static_cast<double>(exact)) >= magnitude * (1.0 / 256);
  return static_cast<std::uint16_t>(field | (conditioned ? 0x8000u : 0u));
}
__device__ double reciprocal_ulp_of_code(std::uint16_t code) { return double_of(std::uint64_t{code & 0x7FFu} << 52); }
__device__ bool conditioned_of_code(std::uint16_t code) { return (code & 0x8000u) != 0; }

// compare::allowance_at, in the order of allowance.cpp's lanes (which give its bits).
__device__ allowance allowance_at(const judge_args& a, const row_entry& r, std::int64_t j, float expected,
                                  double magnitude_in) {
  const bound_constants& b = a.bound;
  if (b.bit_exact) return {0.0, false};
  const double s = a.scale_abs[j], kmax = a.k_max[j];
  const bool decided = isinf(magnitude_in);
  const double magnitude = decided ? 0.0 : magnitude_in;
  const double half = half_ulp(expected);
  const double expected_abs = fabs(static_cast<double>(expected));
  const bool finite = ((bits_of(expected) >> 23) & 0xFFu) != 0xFFu;
  const double value_abs = finite ? (expected_abs + half) * (1 + 0x1p-50) : 0.0;
  const double weights_abs = r.weights_abs * kUp, weighted_q_abs = r.weighted_q_abs * kUp;
  const double weight_term = b.per_weight * weights_abs, weighted_q_term = b.per_weighted_q * weighted_q_abs;
  const double dots_abs = r.q_abs * kmax * kUp;
  const double small_weight_dots_abs = r.small_weight_q_abs * kmax * kUp;
  double sum = b.relative * magnitude + b.per_scale * s;
  sum = sum + weight_term;
  sum = sum + b.per_dot * dots_abs;
  sum = sum + b.per_scaled_small_dot * s * small_weight_dots_abs;
  sum = sum + weighted_q_term;
  sum = sum + b.per_value * value_abs;
  sum = sum + b.absolute;
  const double allowed = sum * (1 + 0x1p-50) + half;
  bool overflow = expected_abs + allowed >= b.result_overflow;
  if (!(b.bit_exact || b.heads_exact)) {
    const double unscaled = r.weighted_q_abs * kmax * kUp;
    const double scaled_weight_max = s * r.weight_max * kUp;
    const double scaled_dot_max = s * r.q_head_max * kmax * kUp;
    if (largest_intermediate(b, magnitude, unscaled, scaled_weight_max, scaled_dot_max) >= b.overflow_threshold) {
      const double tighter = s > 0 ? min_of(unscaled, magnitude / s * kUp) : unscaled;
      overflow |= largest_intermediate(b, magnitude, tighter, scaled_weight_max, scaled_dot_max) >= b.overflow_threshold;
    }
  }
  return {allowed, overflow && !decided};
}

// topk's rank of a float: monotone unsigned, -0 as +0, every NaN above +inf.
__device__ std::uint32_t rank_key(float x) {
  if (isnan(x)) return 0xFFFFFFFFu;
  const std::uint32_t bits = bits_of(x == 0.0f ? 0.0f : x);
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

// A double's order as an unsigned integer (no NaN reaches it).
__device__ std::uint64_t order_key(double x) {
  const std::uint64_t bits = bits_of(x);
  return (bits >> 63) ? ~bits : bits | (std::uint64_t{1} << 63);
}
__device__ double from_order_key(std::uint64_t k) {
  return double_of((k >> 63) ? k & ~(std::uint64_t{1} << 63) : ~k);
}

// The block's shared scratch.
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

struct interval {
  double lower, upper;
};
// topk::interval_of.
__device__ interval interval_of(double exact, double bound) {
  if (isinf(bound)) return {-INFINITY, INFINITY};
  if (isnan(exact)) return {INFINITY, INFINITY};
  if (exact == INFINITY) return {DBL_MAX, DBL_MAX};
  return {exact - bound, exact + bound};
}

// One judged row as both kernels read it: its window and references, and the lookup the top-k
// judging ranks keys by (compare_sets' and decide's: the ranked centre, the allowance, +inf where
// an overflow is excused).
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
  // Key j as topk::compare_sets ranks it: its ranked centre (+inf for a NaN) and its bound (+inf
  // where an overflow is excused); outside the window -inf and 0.
  __device__ void lookup(long long j, double& exact, double& bound) const {
    if (j < b || j >= e) {
      exact = -INFINITY, bound = 0;
      return;
    }
    lookup_in_window(ranked_centre[j], allowance_of(j), exact, bound);
  }
  // The same for an in-window key whose ranked centre `x` and allowance are at hand.
  __device__ static void lookup_in_window(float x, const allowance& al, double& exact, double& bound) {
    exact = isnan(x) ? INFINITY : static_cast<double>(x);
    bound = al.may_overflow ? INFINITY : al.allowed;
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
  __device__ interval interval_at(long long j) const {
    double exact, bound;
    lookup(j, exact, bound);
    return interval_of(static_cast<double>(ranked_centre[j]), bound);
  }
};

// What the top-k judging finds on one row: the kernel's set's overlap with the exact one, and its
// keys not excused by topk::compare_sets' rule (a topk-mismatch finding each).
struct topk_measure {
  long long intruders = 0, overlap = 0;
};

// A warp's lanes in the hardware's own collectives (ballots and reductions), where the judging
// uses them: CUDA at compute capability 8.0 or above. Elsewhere (HIP, whose 64-lane wavefronts the
// code below is not written for, and older NVIDIA devices) every lane does its own share through
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

// One thread's share of a row's ranked keys against the row's band, tallied while the elements
// are read: above the band, how many, how many of them the exact set holds, and their least upper
// end (topk::compare_sets' exact + bound); in the band, the key and its entry kept (in the block's
// scratch, room for a whole row); below it, the greatest lower end (exact - bound).
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
  bool above_unordered = false;  // an upper end above the band is NaN
  double below_greatest_lower = -INFINITY;

  // Called by every thread of the block at each step (`ranked`: whether key j is one, j < n;
  // `exact_word`: the exact set's word that holds key j).
  __device__ void rank(shared_state& sh, bool ranked, std::uint32_t key, int j, double exact, double bound,
                       unsigned exact_word) {
    const bool is_above = ranked && key > high, in_band = ranked && !is_above && key >= low;
    if (is_above) {
      ++above;
      const double upper = exact + bound;
      if (isnan(upper)) above_unordered = true;
      else above_least_upper = min_of(above_least_upper, upper);
    } else if (ranked && !in_band) {
      below_greatest_lower = max_of(below_greatest_lower, exact - bound);
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

// The heat map's cell of key j, j * heat_cols / n, kept as quotient and remainder and advanced by
// kThreads keys a step (the division once per thread and row, not once per key).
struct heat_column {
  unsigned cell, remainder;  // remainder + step_remainder < 2 n < 2^32 (judge_args::n)
  unsigned step_cells, step_remainder, n;

  __device__ heat_column(int j, long long heat_cols, int keys) : n(keys > 0 ? keys : 1) {
    cell = static_cast<unsigned>(j * heat_cols / n), remainder = static_cast<unsigned>(j * heat_cols % n);
    step_cells = static_cast<unsigned>(kThreads * heat_cols / n);
    step_remainder = static_cast<unsigned>(kThreads * heat_cols % n);
  }
  __device__ void advance() {
    cell += step_cells;
    remainder += step_remainder;
    if (remainder >= n) remainder -= n, ++cell;
  }
};

// Raises the heat map's cell to `bits` (judge_kernel's ratio bits + 1; 0: nothing compared here).
// Called by every thread of the block at each step. A warp's keys are consecutive, so they share
// one cell when its first and last lanes do (a lane past the row's end brings 0): the warp raises
// it once, with their largest. Most of a cell's values are below its maximum by the time they
// come, and a plain read spares them the atomic's retries.
__device__ void raise_heat(shared_state& sh, unsigned cell, unsigned long long bits) {
#if MQA_WARP_COLLECTIVES
  if (__shfl_sync(kAllLanes, cell, 0) == __shfl_sync(kAllLanes, cell, 31)) {
    // The largest of 64-bit values as two 32-bit maxima: the high words', then the low words'
    // among the lanes that hold it.
    const auto high = static_cast<unsigned>(bits >> 32);
    const unsigned top = __reduce_max_sync(kAllLanes, high);
    const unsigned low = __reduce_max_sync(kAllLanes, high == top ? static_cast<unsigned>(bits) : 0u);
    if (lane_index() != 0) return;
    bits = static_cast<unsigned long long>(top) << 32 | low;
  }
#endif
  if (bits == 0) return;
  unsigned long long& c = sh.heat[cell];
  if (bits > *static_cast<volatile unsigned long long*>(&c)) atomicMax(&c, bits);
}

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
    double exact, bound;
    row.lookup(band_tally::column_of(t.entries[p]), exact, bound);
    highest_dropped = max_of(highest_dropped, exact - bound);
  }
  highest_dropped = block_max(sh, highest_dropped);
  if (block_sum(sh, t.above_unordered || !(t.above_least_upper >= highest_dropped)) != 0) return false;
  long long intruders = 0;
  for (long long p = threadIdx.x; p < in_band; p += kThreads) {
    if (t.keys[p] < threshold) continue;
    double exact, bound;
    row.lookup(band_tally::column_of(t.entries[p]), exact, bound);
    intruders += !(exact + bound >= highest_dropped);
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
    double exact, bound;
    row.lookup(j, exact, bound);
    highest_dropped = max_of(highest_dropped, exact - bound);
  }
  highest_dropped = block_max(sh, highest_dropped);
  long long intruders = 0;
  for (long long p = threadIdx.x; p < candidates; p += kThreads) {
    const long long j = candidate_key(p);
    if (!in_set(kernel_set, j)) continue;
    double exact, bound;
    row.lookup(j, exact, bound);
    intruders += !(exact + bound >= highest_dropped);
  }
  m.intruders = block_sum(sh, intruders);
  return m;
}

__global__ void __launch_bounds__(kThreads) prepare_kernel(judge_args a) {
  __shared__ shared_state sh;
  const long long words = (a.n + 31) / 32;
  for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const row_context row(a, r);
    const long long b = row.b, e = row.e, width = e - b;
    long long nan_allowances = 0;
    for (long long j = b + threadIdx.x; j < e; j += kThreads) nan_allowances += !(row.store_allowance(j).allowed >= 0);
    row_preparation out;
    out.nan_allowances = block_sum(sh, nan_allowances);
    if (width > 0 && out.nan_allowances == 0) {
      const long long k = a.topk < width ? a.topk : width;
      mark_largest(sh, [&](long long p) { return rank_key(row.centre[b + p]); }, [&](long long p) { return b + p; }, width,
                   k, a.exact_sets + r * words);
      if (k > 0) {  // the band a passing output's threshold lies in
        std::uint32_t band = 0;
        long long take = 0, equal = 0;
        select_largest<std::uint32_t, 32>(sh, [&](long long p) { return row.passing_keys(b + p).low; }, width, k, band,
                                          take, equal);
        out.band_low = band;
        select_largest<std::uint32_t, 32>(sh, [&](long long p) { return row.passing_keys(b + p).high; }, width, k, band,
                                          take, equal);
        out.band_high = band;
      }
      // topk::decide over the window's intervals at the case's k.
      const long long kd = a.topk < 0 ? 0 : k;
      const bool keep_all = kd == width, drop_all = kd == 0;
      double keep_above = -INFINITY, drop_below = INFINITY;
      std::uint64_t key = 0;
      long long take = 0, equal = 0;
      if (!keep_all) {  // the (w - k')-th smallest upper end: the (k' + 1)-th largest
        select_largest<std::uint64_t, 64>(sh, [&](long long p) { return order_key(row.interval_at(b + p).upper); },
                                          width, kd + 1, key, take, equal);
        keep_above = from_order_key(key);
      }
      if (!drop_all && !keep_all) {  // the k'-th largest lower end
        select_largest<std::uint64_t, 64>(sh, [&](long long p) { return order_key(row.interval_at(b + p).lower); },
                                          width, kd, key, take, equal);
        drop_below = from_order_key(key);
      }
      long long keep = 0, drop = 0, ambiguous = 0;
      for (long long j = b + threadIdx.x; j < e; j += kThreads) {
        const interval v = row.interval_at(j);
        if (keep_all || v.lower > keep_above) ++keep;
        else if (drop_all || v.upper < drop_below) ++drop;
        else ++ambiguous;
      }
      out.must_keep = block_sum(sh, keep);
      out.must_drop = block_sum(sh, drop);
      out.ambiguous = block_sum(sh, ambiguous);
      out.decided_k = kd;
    }
    if (threadIdx.x == 0) a.prepared[r] = out;
    __syncthreads();
  }
}

// Two blocks a multiprocessor (blocks_for launches two per multiprocessor): at its own choice of 128
// registers nvcc left room for one block of 512 threads on an H200, a quarter of the warps, and the
// kernel waits on its loads (docs/measurements.md). At 64 registers it spills a little (ptxas says
// how much), and when this bound was set a warm verdict's comparator took 22 ms instead of 34 ms at
// the production shape.
// (HIP's kernel language reads the second figure as warps per execution unit, not blocks: on AMD a
// looser register budget, unmeasured.)
__global__ void __launch_bounds__(kThreads, 2) judge_kernel(judge_args a, row_summary* rows_out, totals* all,
                                                         unsigned* scratch) {
  __shared__ shared_state sh;
  const long long n = a.n;
  const long long words = (n + 31) / 32;
  // The block's scratch (judge_rows): a row's kernel set, and its band's keys and entries (band_tally).
  unsigned* kernel_set = scratch + static_cast<long long>(blockIdx.x) * (words + 2 * n);
  std::uint32_t* band_keys = kernel_set + words;
  std::uint32_t* band_entries = band_keys + n;
  for (int b = threadIdx.x; b < kUlpBuckets; b += kThreads)
    sh.hist_ulps[b] = sh.hist_magnitude[b] = sh.hist_conditioned[b] = 0;
  std::uint32_t ulps_max = 0, conditioned_max = 0;  // distances of non-NaN floats: below 2^32
  double magnitude_max = 0;  // in units of 2^-8 ULP, an integer

  for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const row_context row(a, r);
    const long long i = row.i, b = row.b, e = row.e;
    const float* reference = row.reference;
    const float* centre = row.centre;
    const float* reference_bf16 = row.reference_bf16;
    const float* centre_bf16 = row.centre_bf16;
    const std::uint16_t* ulp_scales = row.ulp_scales;
    const float* output_row = a.output + i * a.stride;
    for (int c = threadIdx.x; c < 128; c += kThreads) sh.heat[c] = 0;
    if (threadIdx.x == 0) sh.band_count = 0;
    __syncthreads();

    // Each thread's counts (at most a key a step) fit 32 bits; the row's are summed in 64.
    int compared = 0, findings = 0, nan_in_window = 0, witness_differing = 0, witness_matched = 0;
    double worst_ratio = 0;
    long long worst_col = -1;
    const bool witnessed = row.w.witnessed != 0;
    if (witnessed) {  // judge::answer_copy_counts, on the float32 reference and centre: a pass of its own
      for (long long j = b + threadIdx.x; j < e; j += kThreads) {
        const float x = reference[j], expected = centre[j];
        if (isfinite(x) && isfinite(expected) && bits_of(x) != bits_of(expected)) {
          ++witness_differing;
          witness_matched += bits_of(output_row[j]) == bits_of(x);
        }
      }
    }
    // The kernel's top-k is found while its keys are read: each ranked key is tallied against
    // the row's band (band_tally), and the band's keys kept in the block's scratch.
    const row_preparation prepared = a.prepared[r];
    const unsigned* exact_set = a.exact_sets + r * words;
    band_tally tally{prepared.band_low, prepared.band_high, band_keys, band_entries};
    // Below 2^31 (judge_args::n).
    const int key_count = static_cast<int>(n), begin = static_cast<int>(b), end = static_cast<int>(e);
    const bool ranked_by_centre = row.ranked_centre == centre;
    heat_column heat(static_cast<int>(threadIdx.x), a.heat_cols, key_count);
    // Every thread takes every step, its key past the row's end or not: the tally and the heat map
    // are raised by the warp together.
    for (int base = 0; base < key_count; base += kThreads, heat.advance()) {
      const int j = base + static_cast<int>(threadIdx.x);
      bool ranked = false;  // what the tally is given: the key's rank, exact and bound
      std::uint32_t key = 0;
      double ranked_exact = 0, ranked_bound = 0;
      unsigned long long heat_bits = 0;
      unsigned exact_word = 0;
      if (j < key_count) {
        // Each of the key's loads issued before any is waited for.
        const bool in_window = j >= begin && j < end;
        const float actual = output_row[j];
        exact_word = exact_set[j / 32];
        float expected = 0, reference_value = 0;
        double allowance_bits = 0;
        std::uint16_t scale = 0;
        if (in_window) {
          expected = centre[j];
          reference_value = reference[j];
          allowance_bits = row.allowances[j];
          scale = ulp_scales[j];
        }
        const bool poison = a.poisoned && bits_of(actual) == a.poison_bits;
        if (!in_window) {
          if (a.clean) {  // ranked too, below every key in the window (row_context::lookup's -inf and 0)
            if (poison || !(isinf(actual) && actual < 0)) ++findings;  // unwritten, mask-leak
            ranked = true;
            key = rank_key(actual);
            ranked_exact = -INFINITY, ranked_bound = 0;
          }
        } else {
          nan_in_window |= isnan(actual) && !poison;
          const allowance al = allowance_of_code(allowance_bits);
          ranked = true;
          key = rank_key(actual);
          row_context::lookup_in_window(ranked_by_centre ? expected : row.ranked_centre[j], al, ranked_exact,
                                        ranked_bound);
          // Both finite and written (the usual case) first: compared; else the special values'
          // findings, in the host's order.
          if (!poison && isfinite(actual) && isfinite(expected)) {
            const float truth = a.bf16 ? reference_bf16[j] : reference_value;
            if (isfinite(truth)) {
              const std::uint32_t ulps =
                  a.bf16 ? ulp_distance(round_to_bfloat16(actual), truth) >> 16 : ulp_distance(actual, truth);
              const int ulps_bucket = bucket_of(ulps);
              atomicAdd(&sh.hist_ulps[ulps_bucket], 1u);
              ulps_max = ulps > ulps_max ? ulps : ulps_max;
              ++compared;
              const double exact = reference_value;
              const double error = fabs(static_cast<double>(actual) - exact);
              // The host's error / ulp_of_magnitude, bit for bit, without the division's subroutine.
              // (The histogram's integer, units capped at 2^62, keeps units' order: the largest
              // is kept as a float64 and capped once, at the end.)
              const double units = ceil(error * reciprocal_ulp_of_code(scale) * 256);
              atomicAdd(&sh.hist_magnitude[bucket_of_integral(units)], 1u);
              magnitude_max = units > magnitude_max ? units : magnitude_max;
              if (conditioned_of_code(scale)) {
                atomicAdd(&sh.hist_conditioned[ulps_bucket], 1u);
                conditioned_max = ulps > conditioned_max ? ulps : conditioned_max;
              }
            }
            const float target = a.bf16 && a.bound.bit_exact ? centre_bf16[j] : expected;
            const double error = fabs(static_cast<double>(actual) - static_cast<double>(target));
            const bool fails = a.bound.bit_exact
                                   ? (a.bf16 ? bits_of(actual) != bits_of(target) : ulp_distance(actual, expected) != 0)
                                   : error > al.allowed;
            // (0 / allowed is +0: the quotient's bits without the division's slow path for a zero.)
            const double ratio = error == 0 ? 0.0 : al.allowed > 0 ? error / al.allowed : INFINITY;
            if (worst_col < 0 || ratio > worst_ratio) worst_ratio = ratio, worst_col = j;
            heat_bits = bits_of(ratio) + 1;
            findings += fails;
          } else {
            const bool same_sign = signbit(actual) == signbit(expected);
            if (poison) {
              ++findings;
            } else if (isnan(expected)) {
              findings += !isnan(actual);
            } else if (isnan(actual)) {
              ++findings;
            } else if (isinf(actual) && !isinf(expected) && al.may_overflow && same_sign) {
              // a legitimate overflow
            } else if (isinf(actual) && actual < 0 && !(isinf(expected) && expected < 0)) {
              ++findings;  // a mask hole, or an overflow
            } else if (isinf(expected)) {
              findings += actual != expected && !(al.may_overflow && same_sign);
            } else if (isinf(actual)) {
              ++findings;
            }
          }
        }
      }
      tally.rank(sh, ranked, key, j, ranked_exact, ranked_bound, exact_word);
      raise_heat(sh, heat.cell, heat_bits);
    }
    const long long row_compared = block_sum(sh, compared), row_findings = block_sum(sh, findings);
    long long row_witness_differing = 0, row_witness_matched = 0;
    if (witnessed) {  // uniform over the block
      row_witness_differing = block_sum(sh, witness_differing);
      row_witness_matched = block_sum(sh, witness_matched);
    }
    const bool row_nan_in_window = block_sum(sh, nan_in_window) != 0;
    block_worst(sh, worst_ratio, worst_col);
    const long long cell_row = i * a.heat_rows / a.m;
    for (int c = threadIdx.x; c < a.heat_cols; c += kThreads)
      if (sh.heat[c] != 0) atomicMax(&all->heat[cell_row * a.heat_cols + c], sh.heat[c]);

    row_summary out;
    out.compared = row_compared;
    out.witness_differing = row_witness_differing;
    out.witness_matched = row_witness_matched;
    out.worst_ratio = worst_ratio;
    out.worst_col = worst_col;
    out.nan_in_window = row_nan_in_window;
    // The top-k needs every allowance a number (prepare_rows' exact set); an output with a finding
    // is judged on the host: it is not measured for them here.
    if (e > b && row_findings == 0 && prepared.nan_allowances == 0) {
      const long long width = e - b;
      const long long k = a.topk < width ? a.topk : width;
      topk_measure m;
      out.topk_from_band = a.topk_band && topk_from_band(sh, row, k, tally, m);
      if (!out.topk_from_band)
        m = topk_by_selection(sh, row, [&](long long j) { return output_row[j]; }, exact_set, kernel_set, k);
      out.findings = m.intruders;  // topk-mismatch (mask errors already counted)
      out.overlap = m.overlap;
      out.k = k;
    }
    out.findings += row_findings;
    if (threadIdx.x == 0) rows_out[r] = out;
    __syncthreads();
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kUlpBuckets; b += kThreads) {
    if (sh.hist_ulps[b]) atomicAdd(&all->ulps[b], static_cast<unsigned long long>(sh.hist_ulps[b]));
    if (sh.hist_magnitude[b]) atomicAdd(&all->magnitude[b], static_cast<unsigned long long>(sh.hist_magnitude[b]));
    if (sh.hist_conditioned[b]) atomicAdd(&all->conditioned[b], static_cast<unsigned long long>(sh.hist_conditioned[b]));
  }
  atomicMax(&all->ulps_max, static_cast<unsigned long long>(ulps_max));
  const unsigned long long scaled_max =
      !(magnitude_max < 0x1p62) ? (1ULL << 62) : static_cast<unsigned long long>(magnitude_max);
  atomicMax(&all->magnitude_max, scaled_max);
  atomicMax(&all->conditioned_max, static_cast<unsigned long long>(conditioned_max));
}

// Bits of two launches over a range per row: the count of differing elements.
__global__ void __launch_bounds__(kThreads) compare_kernel(const std::uint32_t* first, const std::uint32_t* second,
                                                           long long stride, const compared_range* ranges,
                                                           long long count, unsigned long long* differing) {
  for (long long r = blockIdx.x; r < count; r += gridDim.x) {
    const compared_range c = ranges[r];
    unsigned long long here = 0;
    for (long long j = c.begin + threadIdx.x; j < c.end; j += kThreads) here += first[c.i * stride + j] != second[c.i * stride + j];
    if (here != 0) atomicAdd(differing, here);
  }
}

// Blocks for a.rows rows: two a multiprocessor, more where a block's 32-bit counts would pass 2^31
// elements.
long long blocks_for(const judge_args& a) {
  // The device's multiprocessors, asked once per device (hipGetDeviceProperties is slow).
  static std::mutex lock;
  static std::map<int, int> multiprocessors;
  const int device = current_device();
  int count = 0;
  {
    const std::lock_guard<std::mutex> held(lock);
    if (!multiprocessors.contains(device)) {
      hipDeviceProp_t prop;
      gpu::check(hipGetDeviceProperties(&prop, device), "hipGetDeviceProperties");
      multiprocessors[device] = prop.multiProcessorCount;
    }
    count = multiprocessors[device];
  }
  long long blocks = 2LL * count;
  const long long per_block_rows = (std::int64_t{1} << 31) / (a.n > 0 ? a.n : 1);
  if (per_block_rows > 0 && (a.rows + blocks - 1) / blocks > per_block_rows)
    blocks = (a.rows + per_block_rows - 1) / per_block_rows;
  return blocks > a.rows ? a.rows : blocks;
}

// Device memory for one call.
struct owned {
  void* p = nullptr;
  ~owned() { device_free(p); }
};

}  // namespace

void* device_allocate(std::size_t bytes, const char* what) {
  void* p = nullptr;
  gpu::check(hipMalloc(&p, bytes == 0 ? 1 : bytes), what);
  return p;
}
void device_free(void* p) {
  if (p != nullptr) (void)hipFree(p);
}
void copy_to_device(void* to, const void* from, std::size_t bytes, const char* what) {
  if (bytes != 0) gpu::check(hipMemcpy(to, from, bytes, hipMemcpyHostToDevice), what);
}
void copy_from_device(void* to, const void* from, std::size_t bytes, const char* what) {
  if (bytes != 0) gpu::check(hipMemcpy(to, from, bytes, hipMemcpyDeviceToHost), what);
}

void use_device(int device) { gpu::check(hipSetDevice(device), "hipSetDevice"); }
int current_device() {
  int device = 0;
  gpu::check(hipGetDevice(&device), "hipGetDevice");
  return device;
}

void zero_device(void* p, std::size_t bytes, const char* what) {
  if (bytes != 0) gpu::check(hipMemset(p, 0, bytes), what);
}

unsigned long long differing_elements(const float* first, const float* second, std::int64_t stride,
                                      const compared_range* ranges, std::int64_t count) {
  if (count == 0) return 0;
  owned on_device, sum;
  on_device.p = device_allocate(static_cast<std::size_t>(count) * sizeof(compared_range), "hipMalloc(compared rows)");
  copy_to_device(on_device.p, ranges, static_cast<std::size_t>(count) * sizeof(compared_range), "upload compared rows");
  sum.p = device_allocate(sizeof(unsigned long long), "hipMalloc(launch difference)");
  zero_device(sum.p, sizeof(unsigned long long), "hipMemset(launch difference)");
  const long long blocks = count < 1024 ? count : 1024;
  compare_kernel<<<static_cast<unsigned>(blocks), kThreads>>>(reinterpret_cast<const std::uint32_t*>(first),
                                                              reinterpret_cast<const std::uint32_t*>(second), stride,
                                                              static_cast<const compared_range*>(on_device.p), count,
                                                              static_cast<unsigned long long*>(sum.p));
  gpu::check_launch("compare_kernel");
  gpu::check(hipDeviceSynchronize(), "compare_kernel");
  unsigned long long differing = 0;
  copy_from_device(&differing, sum.p, sizeof differing, "download launch difference");
  return differing;
}

void prepare_rows(const judge_args& a, row_preparation* out) {
  if (a.rows == 0) return;
  prepare_kernel<<<static_cast<unsigned>(blocks_for(a)), kThreads>>>(a);
  gpu::check_launch("prepare_kernel");
  gpu::check(hipDeviceSynchronize(), "prepare_kernel");
  copy_from_device(out, a.prepared, static_cast<std::size_t>(a.rows) * sizeof(row_preparation), "download preparations");
}

void judge_rows(const judge_args& a, row_summary* rows_out, totals* all) {
  if (a.rows == 0) return;
  const long long blocks = blocks_for(a);
  const long long words = (a.n + 31) / 32;
  owned scratch, rows, sums;
  scratch.p = device_allocate(static_cast<std::size_t>(blocks * (words + 2 * a.n)) * sizeof(unsigned),
                              "hipMalloc(top-k sets and bands)");
  rows.p = device_allocate(static_cast<std::size_t>(a.rows) * sizeof(row_summary), "hipMalloc(row summaries)");
  sums.p = device_allocate(sizeof(totals), "hipMalloc(totals)");
  zero_device(sums.p, sizeof(totals), "hipMemset(totals)");
  judge_kernel<<<static_cast<unsigned>(blocks), kThreads>>>(a, static_cast<row_summary*>(rows.p),
                                                            static_cast<totals*>(sums.p), static_cast<unsigned*>(scratch.p));
  gpu::check_launch("judge_kernel");
  gpu::check(hipDeviceSynchronize(), "judge_kernel");
  copy_from_device(rows_out, rows.p, static_cast<std::size_t>(a.rows) * sizeof(row_summary), "download row summaries");
  copy_from_device(all, sums.p, sizeof(totals), "download totals");
}

}  // namespace mqa::compare::device
