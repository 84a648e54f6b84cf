// The device comparator's plain records: what its kernel (element_judge.hip) reads and writes,
// with no dependency beyond <cstdint>. The GPU compiler and the host compiler both read this
// header; the host side that fills it from a compare::subject is device_comparator.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mqa::compare::device {

// The error bound's constants (reference/bounds/error_bound.hpp) as the element loop reads them.
struct bound_constants {
  double relative = 0, per_scale = 0, per_weight = 0, per_dot = 0, per_scaled_small_dot = 0, per_weighted_q = 0,
         per_value = 0, absolute = 0;
  double dot_relative = 0;
  double result_overflow = 0;     // where the stored result overflows
  double overflow_threshold = 0;  // float32's: where intermediates overflow
  // Which products before the last may reach float32's overflow (bounds::scale_placement, grouped
  // as error_bound::largest_intermediate treats them).
  enum class placement : std::int32_t { after_head_sum, into_weights, into_dots };
  placement scale = placement::after_head_sum;
  bool bit_exact = false, heads_exact = false;
};

// One judged row: the output's row, its window [begin, end) (begin == end: empty, at the clamped ks)
// and the figures its allowances multiply (compare::row_figures); `witnessed`: one of the suspicion
// note's rows, whose witness is the centre (references' constructor).
struct row_entry {
  std::int64_t i = 0, begin = 0, end = 0;
  double weights_abs = 0, weight_max = 0, q_abs = 0, q_head_max = 0, weighted_q_abs = 0, small_weight_q_abs = 0;
  std::int64_t witnessed = 0;
};

// What the references alone decide of one judged row, whatever the output (prepare_rows): its
// exact top-k set (judge_args::exact_sets) and topk::decide's counts, where every allowance in its
// window is a number (else neither is computed).
struct row_preparation {
  std::int64_t nan_allowances = 0;  // in-window elements whose allowance is NaN (a NaN weight or scale)
                                    // or, which cannot be, negative
  std::int64_t must_keep = 0, must_drop = 0, ambiguous = 0, decided_k = 0;
  // Where an output that passes every element's allowance must have its k-th largest key (topk's
  // rank of a float): between the k-th largest of the window's lowest passing keys and the k-th
  // largest of their highest. judge_rows looks for the kernel's threshold there first; an output
  // whose threshold lies elsewhere is still judged right, by the whole row's selection.
  std::uint32_t band_low = 0, band_high = 0xFFFFFFFFu;
};

// What the kernel measured on one judged row of an output.
struct row_summary {
  std::int64_t compared = 0;      // finite pairs compared in ULPs
  double worst_ratio = 0;         // the largest |error| / bound over the row's finite in-window values,
  std::int64_t worst_col = -1;    // at this key, the first where it is reached (-1: no such value)
  std::int64_t findings = 0;      // elements (and a top-k) that a finding is made of
  std::int32_t nan_in_window = 0;   // a NaN written in the window: recall is not measured
  std::int64_t overlap = 0, k = 0;  // the kernel's top-k against the exact one
  // A witnessed row: its finite in-window elements where the centre's bits differ from the
  // reference's, and of those, where the output has the reference's bits (judge::answer_copy_counts).
  std::int64_t witness_differing = 0, witness_matched = 0;
  std::int32_t topk_from_band = 0;  // the top-k settled from the row's band (row_preparation)
};

// compare::ulp_histogram's buckets (kExact + 23 * kPerOctave).
inline constexpr int kUlpBuckets = 1024 + 23 * 16;
inline constexpr int kHeatCells = 128 * 128;

// Over every judged row: the three ULP histograms (compare::metrics' ulps, scaled.magnitude in
// units of 2^-8 ULP, scaled.conditioned), their maxima, and the heat map's error/bound per cell
// (the ratio's bits + 1; 0 where nothing was compared).
struct totals {
  unsigned long long ulps[kUlpBuckets], magnitude[kUlpBuckets], conditioned[kUlpBuckets];
  unsigned long long ulps_max, magnitude_max, conditioned_max;
  unsigned long long heat[kHeatCells];
};

// The most keys a row may have (judge_args::n): the kernel indexes a row's keys in 32-bit signed
// integers, a block's threads stepping through them together, so its last step's first key,
// n rounded up to a whole step, must stay below 2^31. (A step is 512 keys: block_reduce.hpp's
// kThreads, which element_judge.hip checks against this.)
inline constexpr std::int64_t kMaxKeys = (std::int64_t{1} << 31) - 512;

struct judge_args {
  // The output on the device: float32 [m, stride] (under a bf16 contract, bfloat16 values widened);
  // n at most kMaxKeys.
  const float* output = nullptr;
  std::int64_t m = 0, n = 0, stride = 0;
  // The judged rows, ascending, and their references: [rows, n] each, row r of each is row_table[r].i.
  const row_entry* row_table = nullptr;
  std::int64_t rows = 0;
  const float* reference = nullptr;       // the exact logits, rounded to float32
  const float* reference_bf16 = nullptr;  // rounded to bfloat16 (a bf16 contract), else null
  const float* centre = nullptr;          // what the bound is centred on
  const float* centre_bf16 = nullptr;
  // [rows, n]: uploaded holding the centre's magnitudes A, which prepare_rows replaces, in each
  // window, with what the judging needs of them: the element's allowance (its allowance's bits,
  // negated where an overflow is excused; an allowance is never negative) and, in `ulp_scales`,
  // the magnitude histogram's 1 / ulp as its float64 exponent field (bits 0-10) and whether the
  // element is well conditioned, |exact| >= A / 256 (bit 15).
  double* allowances = nullptr;
  std::uint16_t* ulp_scales = nullptr;
  const double* scale_abs = nullptr;      // [n] compare::key_figures
  const double* k_max = nullptr;
  bound_constants bound;
  bool clean = true, bf16 = false, poisoned = true;
  std::uint32_t poison_bits = 0;
  std::int64_t topk = 2048;
  std::int64_t heat_rows = 0, heat_cols = 0;  // compare::heat_map's geometry over [m, n]
  bool topk_band = true;  // false: every row's top-k by the whole row's selection
  // [rows, ceil(n / 32)] words: each row's exact top-k as a bitset over keys (zeroed before
  // prepare_rows fills it); [rows] what prepare_rows decided.
  unsigned* exact_sets = nullptr;
  row_preparation* prepared = nullptr;
};

// Allocation, copies and the judging launch, on the current device (element_judge.hip). Each throws
// std::runtime_error naming the call and the runtime's message.
void* device_allocate(std::size_t bytes, const char* what);
void device_free(void* p);
void copy_to_device(void* to, const void* from, std::size_t bytes, const char* what);
void copy_from_device(void* to, const void* from, std::size_t bytes, const char* what);
// Makes `device` (an index of the runtime's) current for the calling thread; the current one.
void use_device(int device);
int current_device();
void zero_device(void* p, std::size_t bytes, const char* what);

// One row two launches are compared on: keys [begin, end) of row i.
struct compared_range {
  std::int64_t i = 0, begin = 0, end = 0;
};
// How many elements of two float32 outputs of one shape ([m, stride]) differ in their bits over
// `ranges`.
unsigned long long differing_elements(const float* first, const float* second, std::int64_t stride,
                                      const compared_range* ranges, std::int64_t count);
// Fills a.exact_sets and a.prepared, and turns a.allowances' magnitudes into allowances (needs no
// output): exactly once per upload of the references. `out` [a.rows] receives a copy of a.prepared.
void prepare_rows(const judge_args& a, row_preparation* out);
struct judged_rows;

// The judging launch's memory, allocated once beside the references and used by one judgement at
// a time: on the device each block's top-k set and band (8 bytes a key, and a bit, for each row in
// flight: two blocks a multiprocessor), the rows' summaries and the totals; on the host a pinned
// copy of those two, which one copy fills. Allocating and freeing it on every judgement would put
// allocations and a synchronising free into each warm verdict, and a copy into pageable memory
// goes through the runtime's own staging.
class judge_scratch {
 public:
  explicit judge_scratch(const judge_args& a);  // on the current device
  ~judge_scratch();
  judge_scratch(const judge_scratch&) = delete;
  judge_scratch& operator=(const judge_scratch&) = delete;
  std::size_t bytes() const { return bytes_; }  // of device memory

 private:
  friend judged_rows judge_rows(const judge_args& a, judge_scratch& scratch);
  std::int64_t rows_count_ = 0, n_ = 0;  // what it was made for
  long long blocks_ = 0;
  void* sets_and_bands_ = nullptr;
  void* results_ = nullptr;       // on the device: totals, then [rows] row_summary
  void* host_results_ = nullptr;  // pinned: the same
  std::size_t bytes_ = 0, results_bytes_ = 0;
};
// What one judging launch measured, in its scratch's pinned host memory (valid until the scratch's
// next launch): `rows` [a.rows] and the totals (zero where there are no rows, and nothing was
// launched); the kernel's wall seconds, from its launch to its end, and the copy's back.
struct judged_rows {
  const row_summary* rows = nullptr;
  const totals* all = nullptr;
  double kernel_seconds = 0, download_seconds = 0;
};
// Judges a.rows rows of a.output (after prepare_rows) in `scratch`, made for the same arguments.
judged_rows judge_rows(const judge_args& a, judge_scratch& scratch);

}  // namespace mqa::compare::device
