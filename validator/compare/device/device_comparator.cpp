#include "device_comparator.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <vector>

#include <fmt/core.h>

#include "reference/bounds/error_bound.hpp"
#include "validator/compare/allowance.hpp"
#include "validator/compare/device/judge_args.hpp"
#include "validator/compare/mask_shape.hpp"
#include "validator/elapsed.hpp"
#include "validator/pieces.hpp"

namespace mqa::compare::device {
namespace {

// Device memory freed with its owner.
class buffer {
 public:
  buffer() = default;
  buffer(const void* host, std::size_t bytes, const char* what) : p_(device_allocate(bytes, what)), bytes_(bytes) {
    copy_to_device(p_, host, bytes, what);
  }
  // `bytes` of zeros.
  buffer(std::size_t bytes, const char* what) : p_(device_allocate(bytes, what)), bytes_(bytes) {
    zero_device(p_, bytes, what);
  }
  buffer(buffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  buffer& operator=(buffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~buffer() { device_free(p_); }
  template <class T>
  const T* as() const {
    return static_cast<const T*>(p_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

template <class T>
buffer upload(const std::vector<T>& v, const char* what) {
  return buffer(v.data(), v.size() * sizeof(T), what);
}

// Where row i sits in a result whose rows are ascending.
std::size_t row_in(const exact::result& r, std::int64_t i) {
  return static_cast<std::size_t>(std::lower_bound(r.rows.begin(), r.rows.end(), i) - r.rows.begin());
}

// `values` (rows of `from`) at `rows`, packed in their order on the device: uploaded as they are
// where they are those rows already (every row judged: gigabytes not copied on the host first).
buffer upload_rows(const exact::result& from, const std::vector<float>& values, const std::vector<std::int64_t>& rows,
                   std::int64_t n, const char* what) {
  if (from.rows == rows) return upload(values, what);
  std::vector<float> packed(rows.size() * static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < rows.size(); ++r)
    std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(row_in(from, rows[r]) * static_cast<std::size_t>(n)), n,
                packed.begin() + static_cast<std::ptrdiff_t>(r * static_cast<std::size_t>(n)));
  return upload(packed, what);
}

// error_bound::largest_intermediate's cases.
bound_constants::placement placement_of(bounds::scale_placement p) {
  switch (p) {
    case bounds::scale_placement::after_head_sum: return bound_constants::placement::after_head_sum;
    case bounds::scale_placement::into_weights: return bound_constants::placement::into_weights;
    case bounds::scale_placement::before_relu:
    case bounds::scale_placement::into_keys_bf16: return bound_constants::placement::into_dots;
  }
  throw std::logic_error("compare::device: a scale placement without a case");
}

static_assert(kUlpBuckets == static_cast<int>(ulp_histogram::kBuckets));
static_assert(kHeatCells == heat_map::kMaxCells * heat_map::kMaxCells);

}  // namespace

struct references::state {
  std::vector<row_entry> rows;  // host copy: the windows, for the summary
  std::vector<std::int64_t> row_ids;
  buffer row_table, reference, reference_bf16, centre, centre_bf16, allowances, ulp_scales, scale_abs, k_max, exact_sets,
      prepared;
  std::vector<row_preparation> preparations;  // host copy of `prepared`
  bound_constants bound;
  bool has_centre = false, bf16 = false, witnessed = false;
  int device = 0;  // whose memory holds the buffers
  // The judging launch's memory, for one judgement at a time against these references.
  std::unique_ptr<judge_scratch> scratch;
  mutable std::mutex judging;
};

namespace {

// The kernels' arguments for `s` against `st`, the output not yet bound.
judge_args arguments(const subject& s, const references::state& st) {
  const exact::problem& p = *s.problem;
  judge_args a;
  a.m = p.m;
  a.n = p.n;
  a.row_table = st.row_table.as<row_entry>();
  a.rows = static_cast<std::int64_t>(st.rows.size());
  a.reference = st.reference.as<float>();
  a.reference_bf16 = st.reference_bf16.as<float>();
  a.centre = st.has_centre ? st.centre.as<float>() : a.reference;
  a.centre_bf16 = st.has_centre ? st.centre_bf16.as<float>() : a.reference_bf16;
  a.allowances = const_cast<double*>(st.allowances.as<double>());
  a.ulp_scales = const_cast<std::uint16_t*>(st.ulp_scales.as<std::uint16_t>());
  a.scale_abs = st.scale_abs.as<double>();
  a.k_max = st.k_max.as<double>();
  a.bound = st.bound;
  a.clean = s.contract.mask == kernels::masking::clean;
  a.bf16 = st.bf16;
  a.poisoned = s.poisoned;
  a.poison_bits = poison_bits(s.contract.logits);
  a.topk = s.topk.value_or(2048);
  const heat_map geometry(p.m, p.n);
  a.heat_rows = geometry.rows;
  a.heat_cols = geometry.cols;
  a.exact_sets = const_cast<unsigned*>(st.exact_sets.as<unsigned>());
  a.prepared = const_cast<row_preparation*>(st.prepared.as<row_preparation>());
  return a;
}

}  // namespace

std::optional<std::string> unsupported(const subject& s) {
  if (s.paged) return "a paged problem (its keys differ per request)";
  if (s.indices) return "a top-k kernel's indices";
  if (s.reference == nullptr) return "no reference";
  // The rows outside a sampled centre are judged by the host's comparator (outside_centre.hpp),
  // which reads the output where it lies.
  if (s.centre != nullptr && std::ssize(s.centre->rows) < s.problem->m) return "a centre of sampled rows";
  if (s.problem->n > kMaxKeys)
    return "rows of more than 2^31 - 512 keys (the device comparator indexes a row's keys in 32 bits)";
  if (s.topk && *s.topk < 1) return "a top-k of no keys";
  return std::nullopt;
}

references::references(const subject& s, int device, const std::vector<std::int64_t>& witnessed) : s_(new state) {
  std::unique_ptr<state> owned(s_);
  s_->device = device;
  use_device(device);
  const exact::problem& p = *s.problem;
  const exact::result& ref = *s.reference;
  const exact::result& centre = s.centre ? *s.centre : ref;
  state& st = *s_;
  st.has_centre = s.centre != nullptr;
  st.bf16 = s.contract.logits == kernels::logits_precision::bf16;
  const bounds::error_bound bound = bounds::derive(s.contract.arithmetic(), p.head_dim, p.heads);
  st.bound = {bound.relative, bound.per_scale, bound.per_weight, bound.per_dot, bound.per_scaled_small_dot,
              bound.per_weighted_q, bound.per_value, bound.absolute, bound.dot_relative, bound.result_overflow,
              bounds::kFloat32Overflow, placement_of(bound.scale), bound.bit_exact, bound.heads_exact};
  st.row_ids = centre.rows;
  st.rows.resize(st.row_ids.size());
  // Each row's window and figures (row_figures_of reads the row's every q code: 0.22 s on one core
  // of the CI machine at the production shape), the rows spread over the host's cores.
  constexpr std::size_t kRowsPerPiece = 64;
  const std::size_t rows = st.rows.size();
  for_each_piece(static_cast<std::int64_t>((rows + kRowsPerPiece - 1) / kRowsPerPiece), [&](std::int64_t piece) {
    const std::size_t first = static_cast<std::size_t>(piece) * kRowsPerPiece;
    for (std::size_t x = first; x < std::min(first + kRowsPerPiece, rows); ++x) {
      const std::int64_t i = st.row_ids[x];
      const judged_window w = judged_window_of(p, i);
      const row_figures f = row_figures_of(p, i, bound.small_weight_below);
      st.rows[x] = {i, w.begin, w.end, f.weights_abs, f.weight_max, f.q_abs, f.q_head_max,
                    f.weighted_q_abs, f.small_weight_q_abs, 0};
    }
  });
  if (!witnessed.empty() && !st.has_centre)
    throw std::invalid_argument("compare::device::references: witnessed rows without a centre to witness them");
  for (const std::int64_t i : witnessed) {
    const auto at = std::lower_bound(st.row_ids.begin(), st.row_ids.end(), i);
    if (at == st.row_ids.end() || *at != i || !std::binary_search(ref.rows.begin(), ref.rows.end(), i))
      throw std::invalid_argument(fmt::format("compare::device::references: witnessed row {} is not judged", i));
    st.rows[static_cast<std::size_t>(at - st.row_ids.begin())].witnessed = 1;
    st.witnessed = true;
  }
  const key_figures keys = key_figures_of(p);
  st.row_table = upload(st.rows, "upload judged rows");
  st.reference = upload_rows(ref, ref.logits, st.row_ids, p.n, "upload reference");
  st.allowances = upload(centre.magnitude, "upload magnitudes");  // prepare_rows makes them allowances
  st.ulp_scales = buffer(centre.magnitude.size() * sizeof(std::uint16_t), "hipMalloc(ulp scales)");
  if (st.has_centre) st.centre = upload(centre.logits, "upload centre");
  if (st.bf16) {
    st.reference_bf16 = upload_rows(ref, ref.logits_bf16, st.row_ids, p.n, "upload bfloat16 reference");
    if (st.has_centre) st.centre_bf16 = upload(centre.logits_bf16, "upload bfloat16 centre");
  }
  st.scale_abs = upload(keys.scale_abs, "upload key scales");
  st.k_max = upload(keys.k_max, "upload key maxima");
  // What the references alone decide (each row's exact top-k and decidedness), computed once here.
  const std::size_t words = static_cast<std::size_t>((p.n + 31) / 32);
  st.exact_sets = buffer(st.rows.size() * words * sizeof(unsigned), "hipMalloc(exact top-k sets)");
  st.preparations.resize(st.rows.size());
  st.prepared = upload(st.preparations, "hipMalloc(row preparations)");
  prepare_rows(arguments(s, st), st.preparations.data());
  st.scratch = std::make_unique<judge_scratch>(arguments(s, st));
  bytes_ += st.scratch->bytes();
  for (const buffer* b : {&st.row_table, &st.reference, &st.reference_bf16, &st.centre, &st.centre_bf16, &st.allowances,
                          &st.ulp_scales, &st.scale_abs, &st.k_max, &st.exact_sets, &st.prepared})
    bytes_ += b->bytes();
  owned.release();
}

references::~references() { delete s_; }

int references::device() const { return s_->device; }

device_judgement judge(const subject& s, const references& r, const device_output& out, topk_search search) {
  device_judgement result;
  if (const auto why = unsupported(s)) {
    result.why = *why;
    return result;
  }
  const exact::problem& p = *s.problem;
  const references::state& st = r.held();
  if (st.device != out.device) {
    result.why = fmt::format("the output is on GPU {} and its references on GPU {}", out.device, st.device);
    return result;
  }
  // Known from the references alone (prepare_rows): no output of them is ranked here.
  if (std::any_of(st.preparations.begin(), st.preparations.end(),
                  [](const row_preparation& r) { return r.nan_allowances > 0; })) {
    result.why = "an allowance is NaN (a NaN weight or key scale): its top-k is not ranked on the device";
    return result;
  }
  judge_args a = arguments(s, st);
  a.output = out.data;
  a.stride = out.stride;
  a.topk_band = search == topk_search::band_first;
  const heat_map geometry(p.m, p.n);
  use_device(out.device);
  // The launch's figures lie in the scratch's host memory until the next judgement against these
  // references: read under the same lock.
  const std::lock_guard<std::mutex> held(st.judging);
  const judged_rows judged = judge_rows(a, *st.scratch);
  result.kernel_seconds = judged.kernel_seconds;
  result.download_seconds = judged.download_seconds;
  const auto summarising = std::chrono::steady_clock::now();
  const std::span<const row_summary> rows(judged.rows, st.rows.size());
  const totals& all = *judged.all;

  if (st.witnessed) {
    suspicion w;
    for (const row_summary& o : rows) w.differing += o.witness_differing, w.matched += o.witness_matched;
    result.witness = w;
  }
  clean_rows clean;
  clean.rows = st.row_ids;
  clean.centred = st.has_centre;
  clean.recalls.reserve(rows.size());
  clean.decided.reserve(rows.size());
  metrics& m = clean.stats;
  for (std::size_t x = 0; x < rows.size(); ++x) {
    const row_entry& w = st.rows[x];
    const row_summary& o = rows[x];
    const row_preparation& prepared = st.preparations[x];
    result.findings += o.findings;
    result.topk_rows_from_band += o.topk_from_band;
    ++m.rows_judged;
    m.rows_with_empty_window += w.end == w.begin;
    m.in_window += w.end - w.begin;
    m.compared += o.compared;
    if (o.worst_col >= 0 && (o.worst_ratio > m.max_error_over_bound_seen || m.worst_row < 0)) {
      m.max_error_over_bound_seen = std::max(o.worst_ratio, m.max_error_over_bound_seen);
      m.worst_row = w.i;
      m.worst_col = o.worst_col;
    }
    if (w.end > w.begin) {
      if (o.nan_in_window == 0) {
        clean.recalls.emplace_back(w.i, static_cast<double>(o.overlap) / static_cast<double>(o.k));
        ++m.topk_rows;
      }
      clean.decided.emplace_back(w.i, topk::row_decidedness{w.end - w.begin, prepared.decided_k, prepared.must_keep,
                                                            prepared.must_drop, prepared.ambiguous});
    }
  }
  if (result.findings > 0) {
    result.summary_seconds = seconds_since(summarising);
    return result;
  }
  auto histogram = [](const unsigned long long* counts, unsigned long long max) {
    ulp_histogram h;
    for (std::size_t b = 0; b < ulp_histogram::kBuckets; ++b) {
      h.counts[b] = static_cast<std::int64_t>(counts[b]);
      h.total += h.counts[b];
    }
    h.max = max;
    return h;
  };
  m.ulps = histogram(all.ulps, all.ulps_max);
  m.scaled.magnitude.units = histogram(all.magnitude, all.magnitude_max);
  m.scaled.conditioned = histogram(all.conditioned, all.conditioned_max);
  if (!rows.empty()) {
    m.heat = geometry;
    for (std::size_t c = 0; c < m.heat.error_over_bound.size(); ++c)
      if (all.heat[c] != 0) m.heat.error_over_bound[c] = std::bit_cast<double>(static_cast<std::uint64_t>(all.heat[c] - 1));
  }
  judge_session session(s);
  session.add_clean(std::move(clean));
  result.judged = session.finish();
  result.summary_seconds = seconds_since(summarising);
  return result;
}

}  // namespace mqa::compare::device
