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
//
// Its pieces: element_rules.hpp (one element's rules, as the host states them), block_reduce.hpp
// (a block's sums, maxima and radix selection), row_topk.hpp (a row's top-k, from the band or the
// whole row); here the heat map's share and the kernels.
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "reference/gpu/hip_compat.hpp"
#include "reference/gpu/launch_check.hpp"
#include "reference/gpu/staged_copy.hpp"
#include "validator/compare/device/block_reduce.hpp"
#include "validator/compare/device/element_rules.hpp"
#include "validator/compare/device/judge_args.hpp"
#include "validator/compare/device/row_topk.hpp"

namespace mqa::compare::device {
namespace {

// A row's keys, stepped through kThreads at a time in int, never pass 2^31 - 1 (kMaxKeys).
static_assert(kMaxKeys % kThreads == 0 && kMaxKeys + kThreads - 1 <= INT32_MAX);

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
        select_largest<std::uint64_t, 64>(sh, [&](long long p) { return order_key(row.key_interval(b + p).upper); },
                                          width, kd + 1, key, take, equal);
        keep_above = from_order_key(key);
      }
      if (!drop_all && !keep_all) {  // the k'-th largest lower end
        select_largest<std::uint64_t, 64>(sh, [&](long long p) { return order_key(row.key_interval(b + p).lower); },
                                          width, kd, key, take, equal);
        drop_below = from_order_key(key);
      }
      long long keep = 0, drop = 0, ambiguous = 0;
      for (long long j = b + threadIdx.x; j < e; j += kThreads) {
        const interval v = row.key_interval(j);
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
      bool ranked = false;  // what the tally is given: the key's rank and interval
      std::uint32_t key = 0;
      interval ranked_interval{0, 0};
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
          if (a.clean) {  // ranked too, below every key in the window (row_context::key_interval's)
            if (poison || !(isinf(actual) && actual < 0)) ++findings;  // unwritten, mask-leak
            ranked = true;
            key = rank_key(actual);
            ranked_interval = interval_of(-INFINITY, 0);
          }
        } else {
          nan_in_window |= isnan(actual) && !poison;
          const allowance al = allowance_of_code(allowance_bits);
          ranked = true;
          key = rank_key(actual);
          ranked_interval = row_context::in_window_interval(ranked_by_centre ? expected : row.ranked_centre[j], al);
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
              // The host's error * per_ulp_of_magnitude, bit for bit.
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
      tally.rank(sh, ranked, key, j, ranked_interval, exact_word);
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
  gpu::copy_to_device_staged(to, from, bytes, what);
}
void copy_from_device(void* to, const void* from, std::size_t bytes, const char* what) {
  gpu::copy_to_host_staged(to, from, bytes, what);
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

// The totals first: a row_summary's alignment (8) divides sizeof(totals).
static_assert(sizeof(totals) % alignof(row_summary) == 0);

judge_scratch::judge_scratch(const judge_args& a)
    : rows_count_(a.rows), n_(a.n), blocks_(a.rows == 0 ? 0 : blocks_for(a)) {
  if (a.rows == 0) return;
  const long long words = (a.n + 31) / 32;
  const auto sets_bytes = static_cast<std::size_t>(blocks_ * (words + 2 * a.n)) * sizeof(unsigned);
  results_bytes_ = sizeof(totals) + static_cast<std::size_t>(a.rows) * sizeof(row_summary);
  try {
    sets_and_bands_ = device_allocate(sets_bytes, "hipMalloc(top-k sets and bands)");
    results_ = device_allocate(results_bytes_, "hipMalloc(row summaries and totals)");
    gpu::check(hipHostMalloc(&host_results_, results_bytes_, hipHostMallocPortable), "hipHostMalloc(row summaries)");
  } catch (...) {
    device_free(sets_and_bands_);
    device_free(results_);
    throw;
  }
  bytes_ = sets_bytes + results_bytes_;
}

judge_scratch::~judge_scratch() {
  device_free(sets_and_bands_);
  device_free(results_);
  if (host_results_ != nullptr) (void)hipHostFree(host_results_);
}

judged_rows judge_rows(const judge_args& a, judge_scratch& scratch) {
  if (a.rows != scratch.rows_count_ || a.n != scratch.n_)
    throw std::logic_error("compare::device::judge_rows: scratch made for other rows");
  judged_rows out;
  if (a.rows == 0) {  // nothing launched: no row, and totals of nothing
    static const totals none{};
    out.all = &none;
    return out;
  }
  auto* all = static_cast<totals*>(scratch.results_);
  auto* rows = reinterpret_cast<row_summary*>(static_cast<char*>(scratch.results_) + sizeof(totals));
  zero_device(all, sizeof(totals), "hipMemset(totals)");
  const auto launched = std::chrono::steady_clock::now();
  judge_kernel<<<static_cast<unsigned>(scratch.blocks_), kThreads>>>(a, rows, all,
                                                                    static_cast<unsigned*>(scratch.sets_and_bands_));
  gpu::check_launch("judge_kernel");
  gpu::check(hipDeviceSynchronize(), "judge_kernel");
  const auto ended = std::chrono::steady_clock::now();
  out.kernel_seconds = std::chrono::duration<double>(ended - launched).count();
  // Pinned memory: one copy at the link's speed, with no staging of the runtime's own.
  gpu::check(hipMemcpy(scratch.host_results_, scratch.results_, scratch.results_bytes_, hipMemcpyDeviceToHost),
             "download row summaries and totals");
  out.download_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ended).count();
  out.all = static_cast<const totals*>(scratch.host_results_);
  out.rows = reinterpret_cast<const row_summary*>(static_cast<const char*>(scratch.host_results_) + sizeof(totals));
  return out;
}

}  // namespace mqa::compare::device
