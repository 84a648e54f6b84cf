#include "comparator.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "allowance.hpp"
#include "mask_shape.hpp"
#include "outside_centre.hpp"
#include "reference/fp8/bfloat16.hpp"
#include "reference/fp8/convert.hpp"
#include "reference/topk/topk.hpp"
#include "scale_evidence.hpp"
#include "tally.hpp"
#include "topk_indices.hpp"

namespace mqa::compare {
namespace {

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

struct partial {
  std::array<tally, kFindingClasses> tallies{};
  metrics stats;
  std::vector<mask_shape> shapes;  // per judged row
  std::vector<key_scaling> keys;   // per key: evidence of a power-of-two factor
  std::vector<tally> key_failures;  // per key: the error-bound failures a factor may explain
  std::vector<std::int64_t> rows_with_masked_topk;  // rows whose top-k changed with their mask errors
  // Each ranked row's recall, summed in row order at the end: the same total however the rows
  // were split among threads and blocks (a double sum depends on its grouping).
  std::vector<std::pair<std::int64_t, double>> recalls;
  std::vector<std::pair<std::int64_t, topk::row_decidedness>> decided;  // per row with a window
  indices_tallies indices;  // a top-k index kernel's findings
};

// Where row i sits in a result whose rows are ascending (all rows: at i).
std::size_t row_in(const exact::result& r, std::int64_t i) {
  if (static_cast<std::int64_t>(r.rows.size()) > i && r.rows[static_cast<std::size_t>(i)] == i) return static_cast<std::size_t>(i);
  return static_cast<std::size_t>(std::lower_bound(r.rows.begin(), r.rows.end(), i) - r.rows.begin());
}

struct judge_context {
  const subject& in;
  const bounds::error_bound& bound;
  const key_figures* keys;  // a prefill problem's; null for a paged one (per request, below)
};

// The key figures row i is judged with: the prefill problem's, or its request's, computed when a
// thread first meets the request (a thread's rows are consecutive, so each request about once).
class row_keys {
 public:
  explicit row_keys(const judge_context& ctx) : ctx_(ctx) {}
  const key_figures& of_row(std::int64_t i) {
    if (ctx_.keys != nullptr) return *ctx_.keys;
    const paged::problem& p = *ctx_.in.paged;
    const std::int64_t request = i / p.next_n;
    if (request != request_) {
      figures_ = paged_key_figures(p, request);
      request_ = request;
    }
    return figures_;
  }

 private:
  const judge_context& ctx_;
  std::int64_t request_ = -1;
  key_figures figures_;
};

// One pass over rows [first, last) of the judged rows, gathering everything a judgement needs,
// the per-key evidence for a power-of-two factor included (one pass: an output judged block by
// block cannot be read twice, and a second pass over failing outputs cost as much as the first).
// For a paged problem the evidence is gathered by column (key j of every request together): a
// format or scale mix-up scales every key alike. One row_judge per thread; its buffers are reused
// from row to row.
class row_judge {
 public:
  row_judge(const judge_context& ctx, partial& out)
      : in_(ctx.in), p_(*in_.problem), ref_(*in_.reference), centre_(in_.centre ? *in_.centre : ref_),
        bound_(ctx.bound), clean_(in_.contract.mask == kernels::masking::clean),
        bf16_(in_.contract.logits == kernels::logits_precision::bf16), poison_bits_(compare::poison_bits(in_.contract.logits)),
        out_(out), heat_(out.stats.heat), keys_of_(ctx) {
    out_.keys.assign(static_cast<std::size_t>(p_.n), {});
    out_.key_failures.assign(static_cast<std::size_t>(p_.n), {});
  }

  void judge_rows(std::size_t first, std::size_t last) {
    if (first < last && heat_.empty()) heat_ = heat_map(p_.m, p_.n);
    for (std::size_t r = first; r < last; ++r) judge_row(r);
  }

 private:
  // Row i as judged: its window [b, e) and the rows of every array it reads.
  struct row {
    std::int64_t i = 0, b = 0, e = 0;
    const float* reference = nullptr;
    const float* centre = nullptr;
    // bf16 logits: ULPs and bit-exactness against the correctly rounded bfloat16 values.
    const float* reference_bf16 = nullptr;
    const float* centre_bf16 = nullptr;
    const float* actual = nullptr;
    const double* magnitude = nullptr;  // A of each element: the centre's under a modelled contract
    bool nan_in_window = false;
  };

  tally& tally_of(finding_class c) { return out_.tallies[static_cast<std::size_t>(c)]; }

  // For top-k an excused overflow makes the key indistinguishable from any other large one.
  double allowed_in_window(const row& w, std::int64_t j) const {
    const auto at = static_cast<std::size_t>(j - w.b);
    return overflow_of_[at] ? INFINITY : allowed_of_[at];
  }

  void judge_row(std::size_t r) {
    row w;
    w.i = centre_.rows[r];
    const std::int64_t i = w.i;
    const key_figures& keys = keys_of_.of_row(i);
    const judged_window window = judged_window_of(p_, i);
    w.b = window.begin;
    w.e = window.end;
    w.reference = ref_.logits.data() + row_in(ref_, i) * p_.n;
    w.centre = centre_.logits.data() + r * p_.n;
    w.reference_bf16 = bf16_ ? ref_.logits_bf16.data() + row_in(ref_, i) * p_.n : nullptr;
    w.centre_bf16 = bf16_ ? centre_.logits_bf16.data() + r * p_.n : nullptr;
    w.actual = in_.output.row(i);
    const double* magnitude_row = centre_.magnitude.data() + r * p_.n;
    w.magnitude = magnitude_row;
    const row_figures figures = row_figures_of(p_, i, bound_.small_weight_below);
    ++out_.stats.rows_judged;
    if (w.e == w.b) ++out_.stats.rows_with_empty_window;
    leaks_.clear();
    holes_.clear();
    negative_holes_.clear();
    // Each in-window element's allowed error, and whether it may overflow, in a loop of its own
    // (allowance.hpp: in vector lanes), before the judging loop reads them.
    allowed_of_.resize(static_cast<std::size_t>(w.e - w.b));
    overflow_of_.resize(static_cast<std::size_t>(w.e - w.b));
    allowances(bound_, figures, keys, w.b, w.e, w.centre, magnitude_row, allowed_of_.data(), overflow_of_.data());
    judge_elements(w);
    settle_negative_holes(w);
    record_mask(w);
    if (w.e > w.b) judge_topk(w);
    judge_decidedness(w);
  }

  // Every in-window key's interval as the top-k judging ranks it (judge_topk's lookup), the row's
  // decidedness, and the kernel's indices where there are some (topk_indices.hpp).
  void judge_decidedness(const row& w) {
    const std::int64_t k = in_.indices ? in_.indices->k : in_.topk.value_or(2048);
    const float* ranked_centre = bf16_ && bound_.bit_exact ? w.centre_bf16 : w.centre;
    exact_values_.resize(static_cast<std::size_t>(w.e - w.b));
    intervals_.resize(static_cast<std::size_t>(w.e - w.b));
    for (std::int64_t j = w.b; j < w.e; ++j) {
      const float x = ranked_centre[j];
      const auto at = static_cast<std::size_t>(j - w.b);
      exact_values_[at] = x;
      intervals_[at] = topk::interval_of(x, allowed_in_window(w, j));
    }
    if (w.e > w.b) out_.decided.emplace_back(w.i, topk::decide(intervals_, k));
    if (!in_.indices) return;
    const kernels::indices_view& v = *in_.indices;
    out_.indices.judge({w.i, w.b, w.e, p_.ks[static_cast<std::size_t>(w.i)], {v.row(w.i), static_cast<std::size_t>(v.k)},
                        exact_values_, intervals_},
                       in_.topk_convention);
  }

  void judge_elements(row& w) {
    // The heat map's cell of (i, j), stepped along the row: no division per element.
    const std::int64_t cell_row = heat_.cell_row(w.i);
    std::int64_t cell_col = 0, cell_col_end = heat_.column_end(0);
    for (std::int64_t j = 0; j < p_.n; ++j) {
      while (j >= cell_col_end) cell_col_end = heat_.column_end(++cell_col);
      const std::size_t cell = heat_.cell(cell_row, cell_col);
      const float actual = w.actual[j];
      const bool poison = in_.poisoned && bits_of(actual) == poison_bits_;
      if (j < w.b || j >= w.e) {
        if (!clean_) continue;
        if (poison) {
          tally_of(finding_class::unwritten).add(w.i, j, -INFINITY, actual, 0);
          ++heat_.unwritten[cell];
        } else if (!(std::isinf(actual) && actual < 0)) {
          leaks_.push_back(j);
        }
        continue;
      }
      ++out_.stats.in_window;
      w.nan_in_window |= std::isnan(actual) && !poison;
      judge_in_window(w, j, cell, poison);
    }
  }

  void judge_in_window(const row& w, std::int64_t j, std::size_t cell, bool poison) {
    const std::int64_t i = w.i;
    const float actual = w.actual[j];
    const float expected = w.centre[j];
    const double allowed = allowed_of_[static_cast<std::size_t>(j - w.b)];
    const bool may_overflow = overflow_of_[static_cast<std::size_t>(j - w.b)] != 0;
    auto flag = [&](finding_class c) { tally_of(c).add(i, j, expected, actual, allowed); };
    const bool same_sign = std::signbit(actual) == std::signbit(expected);
    if (poison) {
      flag(finding_class::unwritten);
      ++heat_.unwritten[cell];
    } else if (std::isnan(expected)) {
      if (!std::isnan(actual)) flag(finding_class::error_bound);
    } else if (std::isnan(actual)) {
      flag(finding_class::nan);
      ++heat_.nonfinite[cell];
    } else if (std::isinf(actual) && !std::isinf(expected) && may_overflow && same_sign) {
      // a legitimate overflow
    } else if (std::isinf(actual) && actual < 0 && !(std::isinf(expected) && expected < 0)) {
      (expected < 0 ? negative_holes_ : holes_).push_back(j);  // a mask hole, or an overflow: decided below
    } else if (std::isinf(expected)) {
      if (actual != expected && !(may_overflow && same_sign)) flag(finding_class::error_bound);
    } else if (std::isinf(actual)) {
      flag(finding_class::inf);
      ++heat_.nonfinite[cell];
    } else {
      judge_finite(w, j, cell, allowed);
    }
  }

  // A finite value where a finite one is expected: its ULPs to the exact value and its error
  // against the bound.
  void judge_finite(const row& w, std::int64_t j, std::size_t cell, double allowed) {
    const float actual = w.actual[j];
    const float expected = w.centre[j];
    const float truth = bf16_ ? w.reference_bf16[j] : w.reference[j];
    if (std::isfinite(truth)) {
      const std::uint64_t ulps =
          bf16_ ? bfloat16_ulp_distance(fp8::round_to_bfloat16(actual), truth) : ulp_distance(actual, truth);
      out_.stats.ulps.add(ulps);
      ++out_.stats.compared;
      // The condition-free scales: against the exact value in float32 (not its bfloat16 rounding),
      // in the output format's ULPs of the element's magnitude.
      const double exact = w.reference[j], magnitude = w.magnitude[j];
      const double error = std::fabs(static_cast<double>(actual) - exact);
      out_.stats.scaled.magnitude.add(error * per_ulp_of_magnitude(magnitude, bf16_));
      if (well_conditioned(exact, magnitude)) out_.stats.scaled.conditioned.add(ulps);
    }
    // A bit-exact bf16 contract is measured against the correctly rounded bfloat16 itself.
    const float target = bf16_ && bound_.bit_exact ? w.centre_bf16[j] : expected;
    const double error = std::fabs(static_cast<double>(actual) - static_cast<double>(target));
    const bool fails = bound_.bit_exact ? (bf16_ ? bits_of(actual) != bits_of(target) : ulp_distance(actual, expected) != 0)
                                        : error > allowed;
    if (!ratio_below_maxima(error, allowed, cell)) {
      const double ratio = allowed > 0 ? error / allowed : (error > 0 ? INFINITY : 0.0);
      if (ratio > out_.stats.max_error_over_bound_seen || out_.stats.worst_row < 0) {
        out_.stats.max_error_over_bound_seen = std::max(ratio, out_.stats.max_error_over_bound_seen);
        out_.stats.worst_row = w.i;
        out_.stats.worst_col = j;
      }
      heat_.add_error(cell, ratio);
    }
    if (fails) tally_of(finding_class::error_bound).add(w.i, j, expected, actual, allowed);
    out_.keys[static_cast<std::size_t>(j)].add(expected, actual, allowed, fails);
    if (fails) out_.key_failures[static_cast<std::size_t>(j)].add(w.i, j, expected, actual, allowed);
  }

  // Whether error / allowed, rounded, is at most m, the smaller of the row's worst ratio so far and
  // its heat cell's, so that neither moves and the division can be skipped (most elements of a
  // passing output). With m * allowed a normal double, rounded within 2^-53 of itself, error below
  // it by 2^-50 puts the exact quotient below m, and rounding cannot carry it past m.
  bool ratio_below_maxima(double error, double allowed, std::size_t cell) const {
    if (out_.stats.worst_row < 0 || !(allowed > 0)) return false;
    const double m = std::min(out_.stats.max_error_over_bound_seen, heat_.error_over_bound[cell]);
    if (error == 0) return m >= 0;
    const double reach = m * allowed;
    return reach >= std::numeric_limits<double>::min() && error < reach * (1 - 0x1p-50);
  }

  // -inf inside the window is a mask hole when it looks like masking: at a key whose exact value
  // is not negative (no overflow of a negative value gives it), or in a row whose -inf keys sit
  // at the window's edges. -inf only at interior keys with negative exact values is what an
  // overflowing accumulation writes: `inf`, like +inf.
  void settle_negative_holes(const row& w) {
    if (negative_holes_.empty()) return;
    std::vector<std::int64_t> all = holes_;
    all.insert(all.end(), negative_holes_.begin(), negative_holes_.end());
    std::sort(all.begin(), all.end());
    if (holes_.empty() && !edge_shaped(all, w.b, w.e)) {
      for (const auto j : negative_holes_) {
        tally_of(finding_class::inf).add(w.i, j, w.centre[j], w.actual[j], allowed_in_window(w, j));
        ++heat_.nonfinite[heat_.cell_of(w.i, j)];
      }
    } else {
      holes_ = std::move(all);
    }
  }

  void record_mask(const row& w) {
    out_.stats.mask_leaks += static_cast<std::int64_t>(leaks_.size());
    out_.stats.mask_holes += static_cast<std::int64_t>(holes_.size());
    out_.shapes.push_back(shape_of(leaks_, holes_, w.b, w.e));
    for (const auto j : leaks_) tally_of(finding_class::mask_leak).add(w.i, j, -INFINITY, w.actual[j], 0);
    for (const auto j : holes_) tally_of(finding_class::mask_hole).add(w.i, j, w.centre[j], w.actual[j], 0);
    for (const auto* edge : {&leaks_, &holes_})
      for (const auto j : *edge) ++heat_.mask_mismatches[heat_.cell_of(w.i, j)];
  }

  // Top-k of this row: the kernel's over what a consumer would rank (the whole row under a clean
  // contract, the window otherwise) against the exact one over the window. A NaN in the window
  // makes the kernel's ranking arbitrary: recall is not measured there.
  void judge_topk(const row& w) {
    const std::int64_t b = w.b, e = w.e;
    const std::int64_t k = std::min<std::int64_t>(in_.topk.value_or(2048), e - b);
    // Candidates in-window first: where kernel values tie (-inf in a window that overflowed and
    // -inf outside it, say), a consumer cannot tell them apart, so the tie goes to the window.
    candidates_.clear();
    for (std::int64_t j = b; j < e; ++j) candidates_.push_back(j);
    if (clean_) {
      for (std::int64_t j = 0; j < b; ++j) candidates_.push_back(j);
      for (std::int64_t j = e; j < p_.n; ++j) candidates_.push_back(j);
    }
    ranked_values_.resize(candidates_.size());
    for (std::size_t t = 0; t < candidates_.size(); ++t) ranked_values_[t] = w.actual[candidates_[t]];
    std::vector<std::int64_t> kernel_set = topk::largest(ranked_values_, k);
    for (auto& t : kernel_set) t = candidates_[static_cast<std::size_t>(t)];
    std::sort(kernel_set.begin(), kernel_set.end());  // keys, ascending (compare_sets merges)
    std::vector<std::int64_t> exact_set = topk::largest({w.centre + b, static_cast<std::size_t>(e - b)}, k);
    for (auto& j : exact_set) j += b;
    // A bit-exact bf16 contract allows nothing, but promises bfloat16 values, which can tie
    // where the exact ones differ: a consumer cannot tell those keys apart, so they are ranked
    // by the values promised (the tie excused), not by the exact ones.
    const float* ranked_centre = bf16_ && bound_.bit_exact ? w.centre_bf16 : w.centre;
    const auto cmp = topk::compare_sets(kernel_set, exact_set, candidates_, [&](std::int64_t j) {
      if (j < b || j >= e) return topk::keyed{j, -INFINITY, 0.0};
      return topk::keyed{j, static_cast<double>(ranked_centre[j]), allowed_in_window(w, j)};
    });
    if (!w.nan_in_window) {
      out_.recalls.emplace_back(w.i, static_cast<double>(cmp.overlap) / static_cast<double>(k));
      ++out_.stats.topk_rows;
    }
    if (cmp.excused) return;
    // A row whose mask is wrong changes its top-k as a consequence: the mask finding says so.
    if (!leaks_.empty() || !holes_.empty()) {
      out_.rows_with_masked_topk.push_back(w.i);
    } else {
      const std::int64_t j = cmp.first_intruder >= 0 ? cmp.first_intruder : b;
      tally_of(finding_class::topk_mismatch).add(w.i, j, j >= b && j < e ? w.centre[j] : -INFINITY, w.actual[j], 0);
    }
  }

  const subject& in_;
  const exact::problem& p_;
  const exact::result& ref_;
  const exact::result& centre_;
  const bounds::error_bound& bound_;
  const bool clean_, bf16_;
  const std::uint32_t poison_bits_;
  partial& out_;
  heat_map& heat_;
  row_keys keys_of_;
  std::vector<std::int64_t> leaks_, holes_, negative_holes_;
  std::vector<double> allowed_of_;
  std::vector<std::uint8_t> overflow_of_;  // its own flag: an input-decided element's bound may be inf too
  std::vector<std::int64_t> candidates_;
  std::vector<float> ranked_values_;
  std::vector<double> exact_values_;
  std::vector<topk::interval> intervals_;
};

void judge_rows(const judge_context& ctx, std::size_t first, std::size_t last, partial& out) {
  row_judge(ctx, out).judge_rows(first, last);
}

void merge_into(partial& all, partial& part) {
  for (std::size_t c = 0; c < kFindingClasses; ++c) all.tallies[c].merge(part.tallies[c]);
  metrics& s = all.stats;
  const metrics& o = part.stats;
  s.rows_judged += o.rows_judged;
  s.rows_with_empty_window += o.rows_with_empty_window;
  s.in_window += o.in_window;
  s.compared += o.compared;
  s.ulps.merge(o.ulps);
  s.scaled.merge(o.scaled);
  if (o.worst_row >= 0 && (s.worst_row < 0 || o.max_error_over_bound_seen > s.max_error_over_bound_seen)) {
    s.max_error_over_bound_seen = o.max_error_over_bound_seen;
    s.worst_row = o.worst_row;
    s.worst_col = o.worst_col;
  }
  s.mask_leaks += o.mask_leaks;
  s.mask_holes += o.mask_holes;
  s.topk_rows += o.topk_rows;
  if (all.recalls.empty()) all.recalls = std::move(part.recalls);
  else all.recalls.insert(all.recalls.end(), part.recalls.begin(), part.recalls.end());
  if (all.decided.empty()) all.decided = std::move(part.decided);
  else all.decided.insert(all.decided.end(), part.decided.begin(), part.decided.end());
  all.indices.merge(part.indices);
  s.heat.merge(o.heat);
  all.shapes.insert(all.shapes.end(), part.shapes.begin(), part.shapes.end());
  all.rows_with_masked_topk.insert(all.rows_with_masked_topk.end(), part.rows_with_masked_topk.begin(),
                                   part.rows_with_masked_topk.end());
  if (part.keys.empty()) return;  // rows judged elsewhere, clean (add_clean): no per-key evidence
  if (all.keys.empty()) {
    all.keys = std::move(part.keys);
    all.key_failures = std::move(part.key_failures);
    return;
  }
  for (std::size_t j = 0; j < all.keys.size(); ++j) {
    all.keys[j].merge(part.keys[j]);
    all.key_failures[j].merge(part.key_failures[j]);
  }
}

}  // namespace

std::optional<double> metrics::share_exact() const {
  if (ulps.total == 0) return std::nullopt;
  return static_cast<double>(ulps.counts[0]) / static_cast<double>(ulps.total);
}
std::optional<double> metrics::share_within_one_ulp() const {
  if (ulps.total == 0) return std::nullopt;
  return static_cast<double>(ulps.counts[0] + ulps.counts[1]) / static_cast<double>(ulps.total);
}
std::optional<double> metrics::share_well_conditioned() const {
  if (ulps.total == 0) return std::nullopt;
  return static_cast<double>(scaled.conditioned.total) / static_cast<double>(ulps.total);
}
std::optional<double> metrics::max_error_over_bound() const {
  if (worst_row < 0) return std::nullopt;
  return max_error_over_bound_seen;
}
std::optional<double> metrics::topk_recall() const {
  if (topk_rows == 0) return std::nullopt;
  return topk_recall_sum / static_cast<double>(topk_rows);
}

struct judge_session::state {
  subject in;
  bounds::error_bound bound;
  // A prefill problem's, computed by the first add() (rows judged elsewhere need none); a paged
  // problem's are per request (row_keys).
  std::optional<key_figures> keys;
  partial all;
  bool centred = false;          // some block was judged around a modelled centre
  std::size_t rows_judged = 0;   // over every block
  std::vector<bool> judged;      // [m]: the row was judged (a modelled contract judges a sample)
};

judge_session::judge_session(const subject& base)
    : s_(std::make_unique<state>(state{base, bounds::derive(base.contract.arithmetic(), base.problem->head_dim,
                                                            base.problem->heads),
                                       std::nullopt, {}, false, 0, {}})) {
  s_->in.reference = nullptr;
  s_->in.centre = nullptr;
}

judge_session::~judge_session() = default;

void judge_session::add(const exact::result& reference, const exact::result* centre) {
  if (s_->in.contract.logits == kernels::logits_precision::bf16 &&
      (reference.logits_bf16.empty() || (centre != nullptr && centre->logits_bf16.empty())))
    throw std::logic_error("compare::judge: a bf16 contract needs references computed with exact::options::bf16_logits");
  subject in = s_->in;
  in.reference = &reference;
  in.centre = centre;
  if (!in.paged && !s_->keys) s_->keys = key_figures_of(*in.problem);
  const judge_context ctx{in, s_->bound, in.paged ? nullptr : &*s_->keys};
  const std::size_t rows = (centre ? centre : &reference)->rows.size();
  s_->centred |= centre != nullptr;
  s_->rows_judged += rows;
  s_->judged.resize(static_cast<std::size_t>(in.problem->m), false);
  for (const std::int64_t i : (centre ? centre : &reference)->rows) s_->judged[static_cast<std::size_t>(i)] = true;
  unsigned threads = in.threads ? in.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::clamp<std::size_t>(rows / 4, 1, threads));
  std::vector<partial> parts(threads);
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { judge_rows(ctx, rows * t / threads, rows * (t + 1) / threads, parts[t]); });
  }
  for (auto& part : parts) merge_into(s_->all, part);
}

void judge_session::add_clean(clean_rows rows) {
  s_->centred |= rows.centred;
  s_->rows_judged += rows.rows.size();
  s_->judged.resize(static_cast<std::size_t>(s_->in.problem->m), false);
  for (const std::int64_t i : rows.rows) s_->judged[static_cast<std::size_t>(i)] = true;
  partial part;
  part.stats = std::move(rows.stats);
  part.recalls = std::move(rows.recalls);
  part.decided = std::move(rows.decided);
  merge_into(s_->all, part);
}

judgement judge_session::finish() {
  const exact::problem& p = *s_->in.problem;
  partial& all = s_->all;

  // The rows a modelled contract's sample left out, judged for what needs no centre.
  std::size_t outside_rows = 0;
  if (s_->centred) {
    s_->judged.resize(static_cast<std::size_t>(p.m), false);
    std::vector<std::int64_t> outside;
    for (std::int64_t i = 0; i < p.m; ++i)
      if (!s_->judged[static_cast<std::size_t>(i)]) outside.push_back(i);
    outside_rows = outside.size();
    if (!outside.empty()) {
      if (!s_->in.paged && !s_->keys) s_->keys = key_figures_of(p);
      outside_centre o = judge_outside_centre(s_->in, s_->bound, s_->in.paged ? nullptr : &*s_->keys, outside);
      for (std::size_t c = 0; c < kFindingClasses; ++c) all.tallies[c].merge(o.tallies[c]);
      all.shapes.insert(all.shapes.end(), o.shapes.begin(), o.shapes.end());
      all.stats.mask_leaks += o.mask_leaks;
      all.stats.mask_holes += o.mask_holes;
      all.stats.heat.merge(o.heat);
    }
  }

  // Rows judged in one block (the device comparator's every row) come in order already.
  if (!std::is_sorted(all.recalls.begin(), all.recalls.end())) std::sort(all.recalls.begin(), all.recalls.end());
  all.stats.topk_recall_sum = 0;
  for (const auto& [row, recall] : all.recalls) all.stats.topk_recall_sum += recall;
  all.stats.decidedness = topk::summarise(all.decided);
  judgement j;
  j.stats = all.stats;
  auto emit = [&](finding_class c, const tally& t, std::string detail,
                  std::optional<window_shift> shift = std::nullopt) {
    if (t.count == 0) return;
    j.findings.push_back({c, t.count, t.row, t.col, t.expected, t.actual, t.bound, std::move(detail), std::nullopt,
                          t.expected_known, shift});
  };
  auto tally_of = [&](finding_class c) -> tally& { return all.tallies[static_cast<std::size_t>(c)]; };
  // Mask errors: one constant displacement of a window edge, seen (as far as n and the window
  // let it show) in every row that can show it, is mask-shift.
  const tally& leak = tally_of(finding_class::mask_leak);
  const tally& hole = tally_of(finding_class::mask_hole);
  std::string consequence;
  if (!all.rows_with_masked_topk.empty())
    consequence = fmt::format("; the top-k of {} row{} changes with it", all.rows_with_masked_topk.size(),
                              all.rows_with_masked_topk.size() == 1 ? "" : "s");
  const std::optional<window_shift> shift =
      leak.count + hole.count > 0 ? common_shift(all.shapes, p.n) : std::nullopt;
  if (shift) {
    tally merged = leak;
    merged.merge(hole);
    emit(finding_class::mask_shift, merged,
         fmt::format("{} in every row that can show it{}", describe(*shift), consequence), shift);
  } else {
    emit(finding_class::mask_leak, leak,
         "finite values outside [ks, ke) under a clean contract: a consumer's top-k can pick them" + consequence);
    emit(finding_class::mask_hole, hole,
         "-inf inside [ks, ke): keys the row should see are masked" + (leak.count ? std::string() : consequence));
  }
  emit(finding_class::nan, tally_of(finding_class::nan), "NaN where the exact logit is a number");
  emit(finding_class::inf, tally_of(finding_class::inf),
       "+-inf where the exact logit is finite and no order the contract allows overflows");

  // error-bound, except what one power of two explains key by key (a format or scale mix-up).
  const tally& errors = tally_of(finding_class::error_bound);
  if (errors.count > 0) {
    const scaling_verdict scaled = explain_by_power_of_two(all.keys);
    if (scaled.explained > 0) {
      tally explained, rest;
      for (std::size_t key = 0; key < all.keys.size(); ++key)
        (scaled.scaled_keys[key] ? explained : rest).merge(all.key_failures[key]);
      explained.count = scaled.explained;
      rest.count = errors.count - scaled.explained;
      if (rest.count > 0 && rest.row < 0) rest = errors, rest.count = errors.count - scaled.explained;
      emit(finding_class::scale_factor, explained,
           fmt::format("in-window values are 2^{} = {} times the exact ones on {} of {} keys with compared values (a "
                       "format or scale mix-up: e4m3fn read as e4m3fnuz halves values)",
                       scaled.power, std::ldexp(1.0, scaled.power), scaled.keys, scaled.keys_with_evidence));
      if (rest.count > 0)
        emit(finding_class::error_bound, rest, "farther from the exact value than the declared arithmetic allows");
    } else {
      const auto worst = all.stats.max_error_over_bound();
      emit(finding_class::error_bound, errors,
           fmt::format("farther from the exact value than the declared arithmetic allows (max error/bound {})",
                       worst ? fmt::format("{:.3g}", *worst) : std::string("-")));
    }
  }
  emit(finding_class::topk_mismatch, tally_of(finding_class::topk_mismatch),
       "rows whose top-k set differs from the exact one beyond ties the bounds allow");
  emit(finding_class::unwritten, tally_of(finding_class::unwritten), "the poison value survived: never written");
  // A top-k kernel's indices need no exact value to be outside the window, repeated or padded
  // wrongly: the rows a modelled contract's sample left out are checked for those too.
  if (s_->in.indices) {
    const kernels::indices_view& v = *s_->in.indices;
    s_->judged.resize(static_cast<std::size_t>(p.m), false);
    for (std::int64_t i = 0; i < p.m; ++i) {
      if (s_->judged[static_cast<std::size_t>(i)]) continue;
      const judged_window w = judged_window_of(p, i);
      all.indices.judge_structure(i, w.begin, w.end, p.ks[static_cast<std::size_t>(i)],
                                  {v.row(i), static_cast<std::size_t>(v.k)}, s_->in.topk_convention);
    }
  }
  all.indices.append_findings(j.findings);
  std::sort(j.findings.begin(), j.findings.end(), [](const finding& a, const finding& b) { return a.kind < b.kind; });

  if (all.stats.rows_judged > 0 && all.stats.rows_with_empty_window == all.stats.rows_judged)
    j.notes.push_back("every window is empty: only masking was judged");
  if (all.stats.in_window > 0 && all.stats.compared == 0)
    j.notes.push_back("no finite in-window value could be compared: arithmetic was not judged");
  if (outside_rows > 0)
    j.notes.push_back(fmt::format(
        "judged on {} of {} rows: the modelled dots are computed for sampled rows (every row where a GPU computes the "
        "centre); the other {} for unwritten values, masking, NaN and infinities{}",
        s_->rows_judged, p.m, outside_rows,
        s_->in.indices ? ", and the top-k indices for their window, duplicates and padding" : ""));
  return j;
}

judgement judge(const subject& in) {
  judge_session session(in);
  session.add(*in.reference, in.centre);
  return session.finish();
}

std::optional<finding> compare_runs(const kernels::output_view& first, const kernels::output_view& second,
                                    const exact::problem& p, const std::vector<std::int64_t>& rows,
                                    kernels::masking mask, unsigned threads) {
  // Rows split among threads (two production outputs are 4 GiB to read), each tallying its own.
  threads = std::max(1u, threads ? threads : std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::clamp<std::size_t>(rows.size(), 1, threads));
  std::vector<tally> parts(threads);
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        tally& part = parts[t];
        for (std::size_t r = rows.size() * t / threads; r < rows.size() * (t + 1) / threads; ++r) {
          const std::int64_t i = rows[r];
          const float* a = first.row(i);
          const float* b = second.row(i);
          const exact::window w = exact::clamped_window(p, i);
          const std::int64_t begin = mask == kernels::masking::clean ? 0 : w.begin;
          const std::int64_t end = mask == kernels::masking::clean ? first.n : std::max(w.begin, w.end);
          // Rows that agree (almost all) at memcmp's speed; element by element only where one differs.
          if (end <= begin ||
              std::memcmp(a + begin, b + begin, static_cast<std::size_t>(end - begin) * sizeof(float)) == 0)
            continue;
          for (std::int64_t j = begin; j < end; ++j)
            if (bits_of(a[j]) != bits_of(b[j])) part.add(i, j, a[j], b[j], 0);
        }
      });
  }
  tally t;
  for (const tally& part : parts) t.merge(part);
  if (t.count == 0) return std::nullopt;
  return finding{finding_class::nondeterministic, t.count, t.row, t.col, t.expected, t.actual, 0,
                 "two launches on the same inputs gave different bits (expected: first launch, actual: second)",
                 std::nullopt, true, std::nullopt};
}

}  // namespace mqa::compare
