// The comparator: one kernel output against the exact reference, under the kernel's contract.
// It yields findings (what is wrong) and metrics (how far off, how it looks), and never a
// verdict from a tolerance of its own: every allowance comes from reference/bounds.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/contract.hpp"
#include "kernels/variant.hpp"
#include "reference/bounds/error_bound.hpp"
#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"
#include "validator/compare/finding.hpp"
#include "validator/compare/heat_map.hpp"
#include "reference/topk/decidedness.hpp"
#include "validator/compare/subject.hpp"
#include "validator/compare/ulp_histogram.hpp"
#include "validator/compare/ulp_scales.hpp"

namespace mqa::compare {

// A NaN with a payload no arithmetic produces: the runner fills outputs with it first, so a
// value still carrying it was never written.
inline constexpr std::uint32_t kPoisonBits = 0x7FC0DEADu;
// The same for bfloat16 outputs (bits 0x7FDE: a quiet NaN whose payload no arithmetic produces),
// widened to float32 as the comparator reads them.
inline constexpr std::uint16_t kPoisonBitsBf16 = 0x7FDEu;
constexpr std::uint32_t poison_bits(bounds::logits_precision l) {
  return l == bounds::logits_precision::bf16 ? std::uint32_t{kPoisonBitsBf16} << 16 : kPoisonBits;
}

// ULPs between two finite floats (+0 and -0 are 0 apart).
inline std::uint64_t ulp_distance(float a, float b) {
  auto ordered = [](float x) -> std::int64_t {
    const auto bits = std::bit_cast<std::uint32_t>(x);
    const auto magnitude = static_cast<std::int64_t>(bits & 0x7FFFFFFFu);
    return bits >> 31 ? -magnitude : magnitude;
  };
  const std::int64_t d = ordered(a) - ordered(b);
  return static_cast<std::uint64_t>(d < 0 ? -d : d);
}
// ULPs of bfloat16 between two finite floats that are bfloat16 values.
inline std::uint64_t bfloat16_ulp_distance(float a, float b) { return ulp_distance(a, b) >> 16; }

// Every ratio and share is empty when nothing was there to measure (no finite pair compared, no
// row whose top-k could be ranked): reports say "none compared" rather than a perfect score.
struct metrics {
  std::int64_t rows_judged = 0, rows_with_empty_window = 0;
  std::int64_t in_window = 0;        // elements inside windows
  std::int64_t compared = 0;         // finite pairs compared in ULPs
  ulp_histogram ulps;                // raw: to the exact value, however it cancelled
  scaled_ulps scaled;                // the condition-free scales (ulp_scales.hpp): the headline
  double max_error_over_bound_seen = 0;  // over compared pairs; see max_error_over_bound()
  std::int64_t worst_row = -1, worst_col = -1;
  std::int64_t mask_leaks = 0, mask_holes = 0;
  double topk_recall_sum = 0;        // over rows whose top-k could be ranked
  std::int64_t topk_rows = 0;
  // How decided each judged row's top-k is under the contract (reference/topk/decidedness.hpp): over
  // rows with a window, at the indices' k where indices were given, else the case's.
  topk::decidedness_summary decidedness;
  heat_map heat;                     // over the judged rows; empty when no row was judged

  std::optional<double> share_exact() const;
  std::optional<double> share_within_one_ulp() const;
  std::optional<double> max_error_over_bound() const;
  // Mean recall over topk_rows: the kernel's top-k against the top-k of what the output is judged
  // around (the exact reference; under a modelled contract, its centre).
  std::optional<double> topk_recall() const;
  std::optional<double> share_well_conditioned() const;  // of the compared pairs
};

// Evidence a kernel could not honestly produce (validator/judge/suspicion.hpp): of the `differing`
// elements where the declared arithmetic's model cannot give the exact reference's bits, `matched`
// hold exactly those bits.
struct suspicion {
  std::int64_t matched = 0, differing = 0;
};

struct judgement {
  std::vector<finding> findings;  // one per class present, ordered by class
  metrics stats;
  std::vector<std::string> notes;  // what the case could not show ("every window is empty", ...)
  // Set when the output equals the exact reference where the contract makes that improbable: not a
  // finding (the values are right), but never a silent pass (the report and `certify` show it).
  std::optional<suspicion> suspected;
  bool pass() const { return findings.empty(); }
};

judgement judge(const subject& in);

// What a comparator outside this file measured over every judged row of an output in which it saw
// nothing a finding is made of (the device comparator, validator/compare/device): the metrics but
// the recall's sum and the decidedness summary, and the per-row figures those are made of.
struct clean_rows {
  std::vector<std::int64_t> rows;  // judged, ascending
  bool centred = false;            // judged around a modelled centre
  metrics stats;
  std::vector<std::pair<std::int64_t, double>> recalls;  // per ranked row
  std::vector<std::pair<std::int64_t, topk::row_decidedness>> decided;  // per row with a window
};

// The same judgement of one output, its rows given in blocks (each block's reference and centre
// computed on those rows only, every row of the output at most once; a block's centre rows, when
// it has a centre, are the rows judged, as in subject): `check` judges a large output
// this way without holding a full reference and magnitude. The base's reference and centre are
// ignored; add() takes them block by block, finish() once gives what judge() would have. A paged
// base (`paged` set) is judged the same way, each row through its request's keys.
class judge_session {
 public:
  explicit judge_session(const subject& base);
  ~judge_session();
  judge_session(const judge_session&) = delete;
  judge_session& operator=(const judge_session&) = delete;
  void add(const exact::result& reference, const exact::result* centre);
  // Rows judged elsewhere, clean: finish() then gives what add() with their references would have.
  // They bring no per-key evidence of a power-of-two factor: on a session that also add()s rows
  // with error-bound failures, a scale-factor would be explained by those rows' keys alone.
  void add_clean(clean_rows rows);
  judgement finish();

 private:
  struct state;
  std::unique_ptr<state> s_;
};

// Bits of run 0 and run 1 in each judged row, over [0, n) under a clean contract and over the
// window under dont-care (outside it anything goes); a difference is `nondeterministic`.
std::optional<finding> compare_runs(const kernels::output_view& first, const kernels::output_view& second,
                                    const exact::problem& p, const std::vector<std::int64_t>& rows,
                                    kernels::masking mask, unsigned threads = 0);

}  // namespace mqa::compare
