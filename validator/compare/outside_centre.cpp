#include "outside_centre.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <thread>

#include "validator/compare/comparator.hpp"

namespace mqa::compare {
namespace {

constexpr std::uint32_t kExponentBits = 0x7F800000u;
constexpr std::uint32_t kNegativeInfinity = 0xFF800000u;
// What the centre's value at a finding's first element stands as until judge::finish computes it.
constexpr float kUnknown = std::numeric_limits<float>::quiet_NaN();
// The magnitude bound's room for a model's dot rounded above sum_d |q_d k_d| (2^-24 relative per
// rounding, a few hundred roundings) and for weights rounded to bfloat16 or float16 (2^-9).
constexpr double kAbove = 1 + 0x1p-6;
// Half of float32's spacing at its largest finite values: the allowance's half an ulp of the
// centre at most.
constexpr double kHalfUlpAtMaximum = 0x1p103;

std::uint32_t float_bits(float x) { return std::bit_cast<std::uint32_t>(x); }

class row_check {
 public:
  row_check(const subject& in, const bounds::error_bound& bound, const key_figures* keys, outside_centre& out)
      : in_(in), p_(*in.problem), bound_(bound), keys_(keys), clean_(in.contract.mask == kernels::masking::clean),
        poison_(poison_bits(in.contract.logits)), out_(out) {}

  void check(std::int64_t i) {
    const auto [b, e] = judged_window_of(p_, i);
    const float* row = in_.output.row(i);
    leaks_.clear();
    holes_.clear();
    if (!suspect(row, b, e)) {
      out_.shapes.push_back(shape_of(leaks_, holes_, b, e));
      return;
    }
    if (clean_) {
      for (std::int64_t j = 0; j < b; ++j) check_outside(i, j, row[j]);
      for (std::int64_t j = e; j < p_.n; ++j) check_outside(i, j, row[j]);
    }
    const row_figures figures = row_figures_of(p_, i, bound_.small_weight_below);
    for (std::int64_t j = b; j < e; ++j) check_inside(i, j, row[j], figures);
    settle(i, b, e, row);
  }

 private:
  // Whether anything in the row can be a finding: a non-finite value in the window (the poison is
  // a NaN), or under a clean contract anything but -inf outside it. Most rows of a passing output
  // are neither, and are told at the speed of a read.
  bool suspect(const float* row, std::int64_t b, std::int64_t e) const {
    std::uint32_t inside = 0;
    for (std::int64_t j = b; j < e; ++j)
      inside |= static_cast<std::uint32_t>((float_bits(row[j]) & kExponentBits) == kExponentBits);
    if (inside != 0) return true;
    if (!clean_) return false;
    std::uint32_t outside = 0;
    for (std::int64_t j = 0; j < b; ++j) outside |= float_bits(row[j]) ^ kNegativeInfinity;
    for (std::int64_t j = e; j < p_.n; ++j) outside |= float_bits(row[j]) ^ kNegativeInfinity;
    return outside != 0;
  }

  tally& tally_of(finding_class c) { return out_.tallies[static_cast<std::size_t>(c)]; }

  bool poison(float actual) const { return in_.poisoned && float_bits(actual) == poison_; }

  void check_outside(std::int64_t i, std::int64_t j, float actual) {
    if (poison(actual)) {
      tally_of(finding_class::unwritten).add(i, j, -INFINITY, actual, 0);
      ++out_.heat.unwritten[out_.heat.cell_of(i, j)];
    } else if (float_bits(actual) != kNegativeInfinity) {
      leaks_.push_back(j);
    }
  }

  void check_inside(std::int64_t i, std::int64_t j, float actual, const row_figures& figures) {
    if (std::isfinite(actual)) return;
    if (poison(actual)) {
      tally_of(finding_class::unwritten).add(i, j, kUnknown, actual, 0, false);
      ++out_.heat.unwritten[out_.heat.cell_of(i, j)];
      return;
    }
    if (!overflow_excluded(i, j, figures)) return;
    if (std::isnan(actual) || actual > 0) {
      tally_of(std::isnan(actual) ? finding_class::nan : finding_class::inf).add(i, j, kUnknown, actual, 0, false);
      ++out_.heat.nonfinite[out_.heat.cell_of(i, j)];
    } else {
      holes_.push_back(j);
    }
  }

  // No order the contract allows overflows at the element (the header's argument).
  bool overflow_excluded(std::int64_t i, std::int64_t j, const row_figures& figures) {
    if (!figures.finite) return false;
    const key_figures& keys = keys_of_row(i);
    const auto at = static_cast<std::size_t>(j);
    if (!keys.finite[at]) return false;
    const double a = figures.weighted_q_abs * keys.k_max[at] * keys.scale_abs[at] * kAbove;
    bounds::element e = element_at(figures, keys, at, a);
    e.value_abs = a;
    return a + bound_.at(e) + kHalfUlpAtMaximum < bound_.result_overflow &&
           bound_.largest_intermediate(e) < bounds::kFloat32Overflow;
  }

  const key_figures& keys_of_row(std::int64_t i) {
    if (keys_ != nullptr) return *keys_;
    const std::int64_t request = i / in_.paged->next_n;
    if (request != request_) {
      request_keys_ = paged_key_figures(*in_.paged, request);
      request_ = request;
    }
    return request_keys_;
  }

  // -inf inside the window: masking where the row's -inf keys sit at its edges, else `inf` (the
  // header says why).
  void settle(std::int64_t i, std::int64_t b, std::int64_t e, const float* row) {
    if (!holes_.empty() && !edge_shaped(holes_, b, e)) {
      for (const auto j : holes_) {
        tally_of(finding_class::inf).add(i, j, kUnknown, row[j], 0, false);
        ++out_.heat.nonfinite[out_.heat.cell_of(i, j)];
      }
      holes_.clear();
    }
    out_.mask_leaks += static_cast<std::int64_t>(leaks_.size());
    out_.mask_holes += static_cast<std::int64_t>(holes_.size());
    out_.shapes.push_back(shape_of(leaks_, holes_, b, e));
    for (const auto j : leaks_) tally_of(finding_class::mask_leak).add(i, j, -INFINITY, row[j], 0);
    for (const auto j : holes_) tally_of(finding_class::mask_hole).add(i, j, kUnknown, row[j], 0, false);
    for (const auto* edge : {&leaks_, &holes_})
      for (const auto j : *edge) ++out_.heat.mask_mismatches[out_.heat.cell_of(i, j)];
  }

  const subject& in_;
  const exact::problem& p_;
  const bounds::error_bound& bound_;
  const key_figures* keys_;
  const bool clean_;
  const std::uint32_t poison_;
  outside_centre& out_;
  std::vector<std::int64_t> leaks_, holes_;
  std::int64_t request_ = -1;
  key_figures request_keys_;
};

}  // namespace

outside_centre judge_outside_centre(const subject& in, const bounds::error_bound& bound, const key_figures* keys,
                                    std::span<const std::int64_t> rows) {
  // Rows split among threads in consecutive runs (a production output's 2 GiB to read), each run's
  // shapes then appended in order.
  unsigned threads = in.threads ? in.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::clamp<std::size_t>(rows.size() / 64, 1, threads));
  std::vector<outside_centre> parts(threads);
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        outside_centre& part = parts[t];
        part.heat = heat_map(in.problem->m, in.problem->n);
        row_check check(in, bound, keys, part);
        for (std::size_t r = rows.size() * t / threads; r < rows.size() * (t + 1) / threads; ++r) check.check(rows[r]);
      });
  }
  outside_centre out = std::move(parts[0]);
  for (unsigned t = 1; t < threads; ++t) {
    for (std::size_t c = 0; c < kFindingClasses; ++c) out.tallies[c].merge(parts[t].tallies[c]);
    out.shapes.insert(out.shapes.end(), parts[t].shapes.begin(), parts[t].shapes.end());
    out.mask_leaks += parts[t].mask_leaks;
    out.mask_holes += parts[t].mask_holes;
    out.heat.merge(parts[t].heat);
  }
  return out;
}

}  // namespace mqa::compare
