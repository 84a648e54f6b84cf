#include "comparator.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <thread>

#include "reference/topk/topk.hpp"

namespace mqa::compare {
namespace {

// Past this the float32 rounding of a real number is +inf (FLT_MAX + half an ulp).
constexpr double kOverflowThreshold = 0x1.ffffffp127;

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

double half_ulp(float x) {
  const float a = std::fabs(x);
  if (!std::isfinite(a)) return 0;
  if (a == std::numeric_limits<float>::max()) return 0x1p103;  // the top binade's ulp is 2^104
  const float next = std::nextafter(a, std::numeric_limits<float>::infinity());
  return (static_cast<double>(next) - a) / 2;
}

// The first (lexicographic) occurrence and the count of one class, as a thread sees it.
struct tally {
  std::int64_t count = 0;
  std::int64_t row = -1, col = -1;
  std::uint32_t expected = 0, actual = 0;
  double bound = 0;

  void add(std::int64_t i, std::int64_t j, float expected_value, float actual_value, double allowed) {
    if (count++ == 0 || std::pair(i, j) < std::pair(row, col)) {
      row = i;
      col = j;
      expected = bits_of(expected_value);
      actual = bits_of(actual_value);
      bound = allowed;
    }
  }
  void merge(const tally& o) {
    if (o.count == 0) return;
    const std::int64_t total = count + o.count;
    if (count == 0 || std::pair(o.row, o.col) < std::pair(row, col)) *this = o;
    count = total;
  }
};

// What the row's mask errors look like: a constant displacement of the window edges, or not.
struct row_shape {
  bool regular = true;
  std::int64_t start_shift = 0, end_shift = 0;  // 0: not observed
  std::int64_t begin = 0, end = 0;
  bool whole_window_dark = false;  // every key of the window is -inf: any shift of at least its length
};

row_shape shape_of(const std::vector<std::int64_t>& leaks, const std::vector<std::int64_t>& holes,
                   std::int64_t b, std::int64_t e) {
  row_shape s{true, 0, 0, b, e};
  std::vector<std::int64_t> before, after;
  for (const auto j : leaks) (j < b ? before : after).push_back(j);
  auto contiguous = [](const std::vector<std::int64_t>& v) {
    for (std::size_t i = 1; i < v.size(); ++i)
      if (v[i] != v[i - 1] + 1) return false;
    return true;
  };
  if (!before.empty()) {
    if (before.back() != b - 1 || !contiguous(before)) return {false};
    s.start_shift = -static_cast<std::int64_t>(before.size());
  }
  if (!after.empty()) {
    if (after.front() != e || !contiguous(after)) return {false};
    s.end_shift = static_cast<std::int64_t>(after.size());
  }
  if (!holes.empty()) {
    if (static_cast<std::int64_t>(holes.size()) == e - b) {  // the whole window is dark: no edge to see
      if (!leaks.empty()) return {false};
      s.whole_window_dark = true;
      return s;
    }
    std::size_t prefix = 0;
    while (prefix < holes.size() && holes[prefix] == b + static_cast<std::int64_t>(prefix)) ++prefix;
    std::size_t suffix = 0;
    while (suffix < holes.size() - prefix &&
           holes[holes.size() - 1 - suffix] == e - 1 - static_cast<std::int64_t>(suffix))
      ++suffix;
    if (prefix + suffix != holes.size()) return {false};
    if (prefix > 0) {
      if (s.start_shift != 0) return {false};
      s.start_shift = static_cast<std::int64_t>(prefix);
    }
    if (suffix > 0) {
      if (s.end_shift != 0) return {false};
      s.end_shift = -static_cast<std::int64_t>(suffix);
    }
  }
  return s;
}

// Whether a row with window [b, e) in [0, n) must show an edge displaced by `shift`. Empty
// windows never must: an inverted one (ks > ke) can stay empty however its end moves.
bool observable_start(std::int64_t shift, const row_shape& r) {
  if (r.end == r.begin) return false;
  return shift < 0 ? r.begin + shift >= 0 : r.end - r.begin > shift;
}
bool observable_end(std::int64_t shift, std::int64_t n, const row_shape& r) {
  if (r.end == r.begin) return false;
  return shift > 0 ? r.end + shift <= n : r.end - r.begin > -shift;
}

struct partial {
  std::array<tally, kFindingClasses> tallies{};
  std::map<int, tally> off_by_power;  // error-bound failures explained by a factor 2^k, by k
  tally unexplained;                  // error-bound failures no single power of two explains
  metrics stats;
  double recall_sum = 0;
  std::vector<row_shape> shapes;  // per judged row (index into reference rows)
};

void judge_rows(const comparison_input& in, const bounds::error_bound& bound, std::size_t first, std::size_t last,
                partial& out) {
  const exact::problem& p = *in.problem;
  const exact::result& ref = *in.reference;
  const bool clean = in.contract.mask == kernels::masking::clean;
  std::vector<std::int64_t> leaks, holes;
  std::vector<double> allowed_in_window;
  std::vector<std::int64_t> candidates;
  std::vector<float> ranked_values;
  for (std::size_t r = first; r < last; ++r) {
    const std::int64_t i = ref.rows[r];
    const exact::window w = exact::clamped_window(p, i);
    const std::int64_t b = w.empty() ? std::clamp<std::int64_t>(p.ks[i], 0, p.n) : w.begin;
    const std::int64_t e = w.empty() ? b : w.end;
    const float* expected_row = ref.logits.data() + r * p.n;
    const double* magnitude_row = ref.magnitude.data() + r * p.n;
    const float* actual_row = in.output.row(i);
    double weights_abs = 0;
    for (std::int64_t h = 0; h < p.heads; ++h) weights_abs += std::fabs(static_cast<double>(p.weights[i * p.heads + h]));
    ++out.stats.rows_judged;
    if (e == b) ++out.stats.rows_with_empty_window;
    leaks.clear();
    holes.clear();
    allowed_in_window.assign(static_cast<std::size_t>(e - b), 0.0);

    for (std::int64_t j = 0; j < p.n; ++j) {
      const float actual = actual_row[j];
      const bool poison = in.poisoned && bits_of(actual) == kPoisonBits;
      if (j < b || j >= e) {
        if (!clean) continue;
        if (poison) out.tallies[static_cast<std::size_t>(finding_class::unwritten)].add(i, j, -INFINITY, actual, 0);
        else if (!(std::isinf(actual) && actual < 0)) leaks.push_back(j);
        continue;
      }
      ++out.stats.in_window;
      const float expected = expected_row[j];
      const double scale_abs = std::fabs(static_cast<double>(p.k_scale[j]));
      const double allowed = bound.bit_exact ? 0.0 : bound.at(magnitude_row[j], scale_abs, weights_abs) + half_ulp(expected);
      allowed_in_window[static_cast<std::size_t>(j - b)] = allowed;
      auto flag = [&](finding_class c) {
        out.tallies[static_cast<std::size_t>(c)].add(i, j, expected, actual, allowed);
      };
      // An error-bound failure that no power of two can explain (the scale-factor analysis below).
      auto unexplained = [&] {
        flag(finding_class::error_bound);
        out.unexplained.add(i, j, expected, actual, allowed);
      };
      // Overflow either way is excused where the arithmetic may legitimately cross float32's
      // overflow threshold: the exact value plus the bound, or any partial sum (at most
      // (1 + relative) A in magnitude), reaches it.
      const bool may_overflow = !bound.bit_exact && (std::fabs(static_cast<double>(expected)) + allowed >= kOverflowThreshold ||
                                                     magnitude_row[j] * (1 + bound.relative) >= kOverflowThreshold);
      const bool same_sign = std::signbit(actual) == std::signbit(expected);
      if (poison) {
        flag(finding_class::unwritten);
      } else if (std::isnan(expected)) {
        if (!std::isnan(actual)) unexplained();
      } else if (std::isnan(actual)) {
        flag(finding_class::nan);
      } else if (std::isinf(actual) && !std::isinf(expected) && may_overflow && same_sign) {
        // a legitimate overflow
      } else if (std::isinf(actual) && actual < 0 && !(std::isinf(expected) && expected < 0)) {
        holes.push_back(j);
      } else if (std::isinf(expected)) {
        if (actual != expected && !(may_overflow && same_sign)) unexplained();
      } else if (std::isinf(actual)) {
        flag(finding_class::inf);
      } else {
        const double error = std::fabs(static_cast<double>(actual) - static_cast<double>(expected));
        const std::uint64_t ulps = ulp_distance(actual, expected);
        out.stats.ulps.add(ulps);
        ++out.stats.compared;
        const bool fails = bound.bit_exact ? ulps != 0 : error > allowed;
        const double ratio = allowed > 0 ? error / allowed : (error > 0 ? INFINITY : 0.0);
        if (ratio > out.stats.max_error_over_bound) {
          out.stats.max_error_over_bound = ratio;
          out.stats.worst_row = i;
          out.stats.worst_col = j;
        }
        if (fails) {
          flag(finding_class::error_bound);
          // Does one power of two explain it? (a format read with the wrong exponent bias)
          bool explained = false;
          if (expected != 0 && actual != 0 && std::signbit(actual) == std::signbit(expected)) {
            const int k = static_cast<int>(std::lround(std::log2(static_cast<double>(actual) / expected)));
            const double factor = std::ldexp(1.0, k);
            if (k != 0 && std::fabs(actual - factor * expected) <= factor * allowed) {
              out.off_by_power[k].add(i, j, expected, actual, allowed);
              explained = true;
            }
          }
          if (!explained) out.unexplained.add(i, j, expected, actual, allowed);
        }
      }
    }
    out.stats.mask_leaks += static_cast<std::int64_t>(leaks.size());
    out.stats.mask_holes += static_cast<std::int64_t>(holes.size());
    out.shapes.push_back(leaks.empty() && holes.empty() ? row_shape{true, 0, 0, b, e} : shape_of(leaks, holes, b, e));
    for (const auto j : leaks) out.tallies[static_cast<std::size_t>(finding_class::mask_leak)].add(i, j, -INFINITY, actual_row[j], 0);
    for (const auto j : holes)
      out.tallies[static_cast<std::size_t>(finding_class::mask_hole)].add(i, j, expected_row[j], actual_row[j], 0);

    // Top-k of this row: the kernel's over what a consumer would rank (the whole row under a
    // clean contract, the window otherwise) against the exact one over the window.
    if (e > b) {
      const std::int64_t k = std::min<std::int64_t>(in.topk.value_or(2048), e - b);
      // Candidates in-window first: where kernel values tie (-inf in a window that overflowed and
      // -inf outside it, say), a consumer cannot tell them apart, so the tie goes to the window.
      candidates.clear();
      for (std::int64_t j = b; j < e; ++j) candidates.push_back(j);
      if (clean) {
        for (std::int64_t j = 0; j < b; ++j) candidates.push_back(j);
        for (std::int64_t j = e; j < p.n; ++j) candidates.push_back(j);
      }
      ranked_values.resize(candidates.size());
      for (std::size_t t = 0; t < candidates.size(); ++t) ranked_values[t] = actual_row[candidates[t]];
      std::vector<std::int64_t> kernel_set = topk::largest(ranked_values, k);
      for (auto& t : kernel_set) t = candidates[static_cast<std::size_t>(t)];
      std::vector<std::int64_t> exact_set = topk::largest({expected_row + b, static_cast<std::size_t>(e - b)}, k);
      for (auto& j : exact_set) j += b;
      const auto cmp = topk::compare_sets(kernel_set, exact_set, candidates, [&](std::int64_t j) {
        if (j < b || j >= e) return topk::keyed{j, -INFINITY, 0.0};
        const float x = expected_row[j];
        return topk::keyed{j, std::isnan(x) ? INFINITY : static_cast<double>(x),
                           allowed_in_window[static_cast<std::size_t>(j - b)]};
      });
      out.recall_sum += static_cast<double>(cmp.overlap) / static_cast<double>(k);
      ++out.stats.topk_rows;
      if (!cmp.excused) {
        const std::int64_t j = cmp.first_intruder >= 0 ? cmp.first_intruder : b;
        out.tallies[static_cast<std::size_t>(finding_class::topk_mismatch)].add(
            i, j, j >= b && j < e ? expected_row[j] : -INFINITY, actual_row[j], 0);
      }
    }
  }
}

std::string shift_sentence(std::int64_t start, std::int64_t end) {
  std::string s;
  if (start != 0)
    s += fmt::format("window start shifted by {:+d} ({})", start,
                     start < 0 ? "keys before ks are written" : "the first keys of the window are -inf");
  if (end != 0) {
    if (!s.empty()) s += "; ";
    s += fmt::format("window end shifted by {:+d} ({})", end,
                     end == 1 ? "ke read as inclusive" : end > 0 ? "keys at and after ke are written" : "the last keys are -inf");
  }
  return s;
}

}  // namespace

void ulp_histogram::add(std::uint64_t ulps) {
  ++total;
  max = std::max(max, ulps);
  std::size_t bucket;
  if (ulps < kExact) {
    bucket = ulps;
  } else {
    const int octave = std::bit_width(ulps) - 1;  // >= 10
    const auto sub = static_cast<std::size_t>((ulps >> (octave - 4)) & (kPerOctave - 1));
    bucket = std::min(kExact + static_cast<std::size_t>(octave - 10) * kPerOctave + sub, kBuckets - 1);
  }
  ++counts[bucket];
}

void ulp_histogram::merge(const ulp_histogram& o) {
  for (std::size_t b = 0; b < kBuckets; ++b) counts[b] += o.counts[b];
  total += o.total;
  max = std::max(max, o.max);
}

std::uint64_t ulp_histogram::percentile(double p) const {
  if (total == 0) return 0;
  const auto rank = static_cast<std::int64_t>(std::ceil(p * static_cast<double>(total)));
  std::int64_t seen = 0;
  for (std::size_t b = 0; b < kBuckets; ++b) {
    seen += counts[b];
    if (seen >= std::max<std::int64_t>(rank, 1)) {
      if (b < kExact) return b;
      const std::size_t octave = (b - kExact) / kPerOctave + 10, sub = (b - kExact) % kPerOctave;
      return (std::uint64_t{1} << octave) + (static_cast<std::uint64_t>(sub) << (octave - 4));
    }
  }
  return max;
}

std::array<std::int64_t, 32> ulp_histogram::octaves() const {
  std::array<std::int64_t, 32> out{};
  for (std::size_t b = 0; b < kBuckets; ++b) {
    std::size_t index;
    if (b < kExact) index = b == 0 ? 0 : static_cast<std::size_t>(std::bit_width(b));
    else index = (b - kExact) / kPerOctave + 11;
    out[std::min<std::size_t>(index, 31)] += counts[b];
  }
  return out;
}

std::uint64_t ulp_distance(float a, float b) {
  auto ordered = [](float x) -> std::int64_t {
    const auto bits = static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(x) & 0x7FFFFFFFu);
    return std::signbit(x) ? -bits : bits;
  };
  const std::int64_t d = ordered(a) - ordered(b);
  return static_cast<std::uint64_t>(d < 0 ? -d : d);
}

double metrics::share_exact() const {
  return ulps.total ? static_cast<double>(ulps.counts[0]) / static_cast<double>(ulps.total) : 1.0;
}
double metrics::share_within_one_ulp() const {
  return ulps.total ? static_cast<double>(ulps.counts[0] + ulps.counts[1]) / static_cast<double>(ulps.total) : 1.0;
}

judgement judge(const comparison_input& in) {
  const exact::problem& p = *in.problem;
  const bounds::error_bound bound =
      bounds::derive({in.contract.dot, in.contract.heads, in.contract.scale}, p.head_dim, p.heads);
  const std::size_t rows = in.reference->rows.size();
  unsigned threads = in.threads ? in.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::clamp<std::size_t>(rows / 4, 1, threads));
  std::vector<partial> parts(threads);
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { judge_rows(in, bound, rows * t / threads, rows * (t + 1) / threads, parts[t]); });
  }

  partial all;
  double recall_sum = 0;
  for (auto& part : parts) {
    for (std::size_t c = 0; c < kFindingClasses; ++c) all.tallies[c].merge(part.tallies[c]);
    for (auto& [k, t] : part.off_by_power) all.off_by_power[k].merge(t);
    all.unexplained.merge(part.unexplained);
    metrics& s = all.stats;
    const metrics& o = part.stats;
    s.rows_judged += o.rows_judged;
    s.rows_with_empty_window += o.rows_with_empty_window;
    s.in_window += o.in_window;
    s.compared += o.compared;
    s.ulps.merge(o.ulps);
    if (o.max_error_over_bound > s.max_error_over_bound) {
      s.max_error_over_bound = o.max_error_over_bound;
      s.worst_row = o.worst_row;
      s.worst_col = o.worst_col;
    }
    s.mask_leaks += o.mask_leaks;
    s.mask_holes += o.mask_holes;
    s.topk_rows += o.topk_rows;
    recall_sum += part.recall_sum;
    all.shapes.insert(all.shapes.end(), part.shapes.begin(), part.shapes.end());
  }
  all.stats.topk_recall = all.stats.topk_rows ? recall_sum / static_cast<double>(all.stats.topk_rows) : 1.0;

  judgement j;
  j.stats = all.stats;
  auto emit = [&](finding_class c, const tally& t, std::string detail) {
    if (t.count == 0) return;
    j.findings.push_back({c, t.count, t.row, t.col, t.expected, t.actual, t.bound, std::move(detail)});
  };
  auto& tallies = all.tallies;
  auto tally_of = [&](finding_class c) -> tally& { return tallies[static_cast<std::size_t>(c)]; };

  // Mask errors: one constant displacement seen in every row that could show it is mask-shift.
  const tally& leak = tally_of(finding_class::mask_leak);
  const tally& hole = tally_of(finding_class::mask_hole);
  bool shifted = false;
  std::int64_t start_shift = 0, end_shift = 0;
  if (leak.count + hole.count > 0) {
    shifted = true;
    for (const row_shape& s : all.shapes) {
      if (!s.regular) {
        shifted = false;
        break;
      }
      if (s.whole_window_dark) continue;  // consistent with a large enough shift; checked below
      for (auto [seen, shared] : {std::pair{s.start_shift, &start_shift}, std::pair{s.end_shift, &end_shift}}) {
        if (seen == 0) continue;
        if (*shared != 0 && *shared != seen) shifted = false;
        *shared = seen;
      }
    }
    if (shifted) {
      for (const row_shape& s : all.shapes) {
        if (s.whole_window_dark) {
          const std::int64_t length = s.end - s.begin;
          if (!(start_shift >= length || -end_shift >= length)) shifted = false;
          continue;
        }
        if ((start_shift != 0 && observable_start(start_shift, s) && s.start_shift != start_shift) ||
            (end_shift != 0 && observable_end(end_shift, p.n, s) && s.end_shift != end_shift))
          shifted = false;
      }
    }
  }
  if (start_shift == 0 && end_shift == 0) shifted = false;
  if (shifted) {
    tally merged = leak;
    merged.merge(hole);
    emit(finding_class::mask_shift, merged,
         fmt::format("{} in every row that can show it", shift_sentence(start_shift, end_shift)));
  } else {
    emit(finding_class::mask_leak, leak,
         "finite values outside [ks, ke) under a clean contract: a consumer's top-k can pick them");
    emit(finding_class::mask_hole, hole, "-inf inside [ks, ke): keys the row should see are masked");
  }
  emit(finding_class::nan, tally_of(finding_class::nan), "NaN where the exact logit is a number");
  emit(finding_class::inf, tally_of(finding_class::inf), "+-inf where the exact logit is finite and far from overflow");

  // error-bound, unless one power of two explains nearly all of it.
  const tally& errors = tally_of(finding_class::error_bound);
  if (errors.count > 0) {
    std::pair<int, tally> best{0, {}};
    for (const auto& [k, t] : all.off_by_power)
      if (t.count > best.second.count) best = {k, t};
    // A format mix-up moves most of the window, not a stray element: the factor must explain 90%
    // of the failures and at least half of the values compared.
    if (best.first != 0 && best.second.count * 10 >= errors.count * 9 && best.second.count * 2 >= all.stats.compared) {
      emit(finding_class::scale_factor, best.second,
           fmt::format("in-window values are 2^{} = {} times the exact ones (a format or scale mix-up: e4m3fn read "
                       "as e4m3fnuz halves values)",
                       best.first, std::ldexp(1.0, best.first)));
      tally rest = all.unexplained;
      for (const auto& [k, t] : all.off_by_power)
        if (k != best.first) rest.merge(t);
      emit(finding_class::error_bound, rest, "farther from the exact value than the declared arithmetic allows");
    } else {
      emit(finding_class::error_bound, errors,
           fmt::format("farther from the exact value than the declared arithmetic allows (max error/bound {:.3g})",
                       all.stats.max_error_over_bound));
    }
  }
  emit(finding_class::topk_mismatch, tally_of(finding_class::topk_mismatch),
       "rows whose top-k set differs from the exact one beyond ties the bounds allow");
  emit(finding_class::unwritten, tally_of(finding_class::unwritten), "the poison value survived: never written");
  std::sort(j.findings.begin(), j.findings.end(), [](const finding& a, const finding& b) { return a.kind < b.kind; });

  if (all.stats.rows_judged > 0 && all.stats.rows_with_empty_window == all.stats.rows_judged)
    j.notes.push_back("every window is empty: only masking was judged");
  if (all.stats.in_window > 0 && all.stats.compared == 0)
    j.notes.push_back("no finite in-window value could be compared: arithmetic was not judged");
  return j;
}

std::optional<finding> compare_runs(const kernels::output_view& first, const kernels::output_view& second,
                                    const exact::problem& p, const std::vector<std::int64_t>& rows,
                                    kernels::masking mask) {
  tally t;
  for (const std::int64_t i : rows) {
    const float* a = first.row(i);
    const float* b = second.row(i);
    const exact::window w = exact::clamped_window(p, i);
    const std::int64_t begin = mask == kernels::masking::clean ? 0 : w.begin;
    const std::int64_t end = mask == kernels::masking::clean ? first.n : std::max(w.begin, w.end);
    for (std::int64_t j = begin; j < end; ++j)
      if (bits_of(a[j]) != bits_of(b[j])) t.add(i, j, a[j], b[j], 0);
  }
  if (t.count == 0) return std::nullopt;
  return finding{finding_class::nondeterministic, t.count, t.row, t.col, t.expected, t.actual, 0,
                 "two launches on the same inputs gave different bits (expected: first launch, actual: second)"};
}

}  // namespace mqa::compare
