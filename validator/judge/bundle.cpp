#include "bundle.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <numeric>
#include <span>

#include "reference/bounds/accumulators.hpp"
#include "reference/mma/instruction.hpp"
#include "validator/cut/cut.hpp"
#include "validator/diagnose/diagnose.hpp"
#include "validator/input_error.hpp"
#include "validator/judge/judge.hpp"
#include "validator/judge/same_bytes.hpp"
#include "validator/judge/suspicion.hpp"

namespace mqa::judge {
namespace {

using cut::consecutive;

// Every element of `stored` (rows first, first + 1, ... of reference.npy) bit for bit `computed`'s.
void check_stored(std::span<const float> stored, const std::vector<float>& computed, std::int64_t first,
                  std::int64_t n, const std::string& bundle_dir) {
  // Equal bits are equal bytes: the bytes compared first, on every core (gigabytes at production),
  // the element named only where they differ.
  if (stored.size() == computed.size() && same_bytes(stored.data(), computed.data(), stored.size_bytes())) return;
  for (std::size_t x = 0; x < stored.size(); ++x)
    if (std::bit_cast<std::uint32_t>(stored[x]) != std::bit_cast<std::uint32_t>(computed[x]))
      throw input_error(fmt::format("{}/reference.npy: element ({}, {}) differs from the exact reference of the "
                                    "bundle's inputs: the bundle was modified or mixed up",
                                    bundle_dir, first + static_cast<std::int64_t>(x) / n,
                                    static_cast<std::int64_t>(x) % n));
}

// Rows judged per block: about 2^22 elements (16 MiB of reference and 32 MiB of magnitude, more
// with a modelled centre), at most an eighth of the output, in whole blocks of exact::compute's 8.
std::int64_t block_rows(std::int64_t m, std::int64_t n) {
  const std::int64_t elements = std::clamp<std::int64_t>(m * n / 8, std::int64_t{1} << 18, std::int64_t{1} << 22);
  return std::clamp<std::int64_t>(elements / std::max<std::int64_t>(n, 1) / 8 * 8, 8, std::max<std::int64_t>(m, 8));
}

// reference.npy's values at `rows` (ascending, within [first, first + stored / n)).
std::vector<float> stored_rows(std::span<const float> stored, std::int64_t first, std::int64_t n,
                               const std::vector<std::int64_t>& rows) {
  std::vector<float> out(rows.size() * static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < rows.size(); ++r)
    std::copy_n(stored.begin() + (rows[r] - first) * n, n, out.begin() + static_cast<std::ptrdiff_t>(r) * n);
  return out;
}

// reference.npy's rows `rows` (ascending), read one by one: the few judged or diagnosed rows of a
// large file, packed in their order.
std::vector<float> read_stored_rows(const bundle::bundle_inputs& b, const std::vector<std::int64_t>& rows,
                                    std::int64_t n) {
  const auto width = static_cast<std::size_t>(n);
  std::vector<float> out(rows.size() * width);
  for (std::size_t r = 0; r < rows.size(); ++r)
    bundle::read_reference_rows(b, rows[r], 1, std::span<float>(out).subspan(r * width, width));
  return out;
}

// What a block's reference (and centre, or null) is given to: the judge session, or the whole
// references being gathered.
using block_sink = std::function<void(const exact::result&, const exact::result*)>;

// Rows of `block` appended to `whole` (rows ascending across blocks).
void append_rows(exact::result& whole, const exact::result& block) {
  whole.rows.insert(whole.rows.end(), block.rows.begin(), block.rows.end());
  whole.logits.insert(whole.logits.end(), block.logits.begin(), block.logits.end());
  whole.magnitude.insert(whole.magnitude.end(), block.magnitude.begin(), block.magnitude.end());
  whole.logits_bf16.insert(whole.logits_bf16.end(), block.logits_bf16.begin(), block.logits_bf16.end());
  whole.undecided_by_fast_path += block.undecided_by_fast_path;
  whole.dots = block.dots;
}

// The rows of `block` that `wanted` (ascending) names, appended to `whole`: their logits (and
// bfloat16 logits), what the suspicion note's witness reads of a reference.
void append_rows_of(exact::result& whole, const exact::result& block, const std::vector<std::int64_t>& wanted,
                    std::int64_t n) {
  const auto width = static_cast<std::size_t>(n);
  for (std::size_t r = 0; r < block.rows.size(); ++r) {
    if (!std::binary_search(wanted.begin(), wanted.end(), block.rows[r])) continue;
    whole.rows.push_back(block.rows[r]);
    const auto at = [&](const auto& v) { return v.begin() + static_cast<std::ptrdiff_t>(r * width); };
    whole.logits.insert(whole.logits.end(), at(block.logits), at(block.logits) + static_cast<std::ptrdiff_t>(width));
    if (!block.logits_bf16.empty())
      whole.logits_bf16.insert(whole.logits_bf16.end(), at(block.logits_bf16),
                               at(block.logits_bf16) + static_cast<std::ptrdiff_t>(width));
  }
}

// The block-wise judgement of one output (judge_in_blocks).
class block_judge {
 public:
  // `spent`, where given, receives what each step of computing the references took.
  block_judge(const bundle::bundle_inputs& b, const exact::problem& p, const paged::problem* paged,
              const kernels::contract& c, unsigned threads, const engines& e, reference_seconds* spent = nullptr)
      : b_(b), p_(p), paged_(paged), c_(c), threads_(threads), engines_(e), spent_(spent ? spent : &own_),
        modelled_(bounds::traits(c.dot).model != nullptr),
        judged_rows_(modelled_ ? centre_rows(p, paged, consecutive(0, p.m), c, e) : consecutive(0, p.m)) {}

  const std::vector<std::int64_t>& judged_rows() const { return judged_rows_; }

  // Every judged row's reference and centre given to `sink`, block by block (rows ascending).
  void add_blocks(const block_sink& sink) {
    // A modelled contract on a digest-proven prefill bundle whose centre the CPU samples judges a
    // few rows: their reference and centre in one call each (a call per block prepared every key
    // again for each row: decoded, packed and split into the model's operands, 65536 keys per
    // sampled row).
    if (modelled_ && b_.trusted && !paged_ && static_cast<std::int64_t>(judged_rows_.size()) < p_.m) {
      const references judged = few_rows(judged_rows_);
      sink(judged.judged, judged.centre_or_null());
      return;
    }
    const std::int64_t block = block_rows(p_.m, p_.n);
    for (std::int64_t first = 0; first < p_.m; first += block) add_block(sink, first, std::min(block, p_.m - first));
  }

  // Reference and centre of a few rows, reference.npy read row by row (a paged bundle computes them
  // from its cache).
  references few_rows(const std::vector<std::int64_t>& rows) const {
    exact::options eo = reference_options(c_, threads_);
    eo.rows = rows;
    auto start = std::chrono::steady_clock::now();
    const std::vector<float> stored = read_stored_rows(b_, rows, p_.n);
    spent_->read += seconds_since(start);
    start = std::chrono::steady_clock::now();
    exact::result reference = judged_reference(eo, stored, 0);
    spent_->reference += seconds_since(start);
    return {std::move(reference), centre(rows), {}};
  }

 private:
  std::optional<exact::result> centre(std::vector<std::int64_t> rows) const {
    if (!modelled_) return std::nullopt;
    const auto start = std::chrono::steady_clock::now();
    std::optional<exact::result> out = centre_on(c_, p_, paged_, std::move(rows), threads_, engines_);
    spent_->centre += seconds_since(start);
    return out;
  }

  // Elements whose inputs are all finite are the same under either relu rule: a prefill
  // reference.npy proven (by its digest, or by the keeps-NaN reference computed here) gives them,
  // and only the magnitude and the elements a non-finite input touches are computed. A paged
  // problem's dense pieces have rows and keys of their own: it is computed in full.
  exact::result judged_reference(exact::options eo, std::span<const float> stored, std::int64_t first) const {
    if (paged_) return operation::exact_logits(p_, paged_, eo, engines_);
    std::vector<float> some;  // a modelled contract's sampled rows of the block
    if (eo.rows.size() * static_cast<std::size_t>(p_.n) == stored.size()) {
      eo.known_logits = stored;
    } else {
      some = stored_rows(stored, first, p_.n, eo.rows);
      eo.known_logits = some;
    }
    return exact::compute(p_, eo);
  }

  void add_block(const block_sink& sink, std::int64_t first, std::int64_t count) {
    const std::int64_t n = p_.n;
    std::vector<std::int64_t> rows;  // this block's share of the judged rows
    std::copy_if(judged_rows_.begin(), judged_rows_.end(), std::back_inserter(rows),
                 [&](std::int64_t i) { return i >= first && i < first + count; });
    auto start = std::chrono::steady_clock::now();
    if (b_.trusted && static_cast<std::int64_t>(rows.size()) < count) {
      // The digest proved reference.npy: only the judged rows are read (a modelled contract's few
      // sampled rows of a large output), in their order, as judged_reference takes them.
      stored_ = read_stored_rows(b_, rows, n);
    } else {
      stored_.resize(static_cast<std::size_t>(count * n));
      bundle::read_reference_rows(b_, first, count, stored_);
    }
    spent_->read += seconds_since(start);
    exact::options eo = reference_options(c_, threads_);
    exact::result reference;
    if (!b_.trusted) {
      start = std::chrono::steady_clock::now();
      // No digest proves reference.npy is the keeps-NaN reference of these inputs (cases/README.md):
      // every row of it is compared with one computed here.
      exact::options ko = eo;
      ko.relu = exact::relu_rule::keeps_nan;
      ko.rows = consecutive(first, count);
      exact::result keeps_nan = operation::exact_logits(p_, paged_, ko, engines_);
      check_stored(stored_, keeps_nan.logits, first, n, b_.dir.string());
      if (c_.relu == exact::relu_rule::keeps_nan) reference = std::move(keeps_nan);
      spent_->proof += seconds_since(start);
    }
    if (rows.empty()) return;
    if (reference.rows.empty()) {
      eo.rows = rows;
      start = std::chrono::steady_clock::now();
      reference = judged_reference(eo, stored_, first);
      spent_->reference += seconds_since(start);
    }
    const std::optional<exact::result> centred = centre(rows);
    sink(reference, centred ? &*centred : nullptr);
  }

  const bundle::bundle_inputs& b_;
  const exact::problem& p_;
  const paged::problem* paged_;
  const kernels::contract& c_;
  unsigned threads_;
  const engines& engines_;
  reference_seconds own_;
  reference_seconds* spent_;
  bool modelled_;
  std::vector<std::int64_t> judged_rows_;
  std::vector<float> stored_;
};

}  // namespace

references references_for(const bundle::bundle& b, const exact::problem& p, const paged::problem* paged,
                          const kernels::contract& c, unsigned threads, const std::string& bundle_dir,
                          const engines& e) {
  const exact::options eo = reference_options(c, threads);
  references r;
  r.judged = operation::exact_logits(p, paged, eo, e);
  // reference.npy is the keeps-NaN reference of the bundle's inputs (cases/README.md).
  exact::result keeps_nan;
  if (c.relu != exact::relu_rule::keeps_nan) {
    exact::options ko = eo;
    ko.relu = exact::relu_rule::keeps_nan;
    keeps_nan = operation::exact_logits(p, paged, ko, e);
  }
  const exact::result& stored = c.relu == exact::relu_rule::keeps_nan ? r.judged : keeps_nan;
  check_stored(b.reference, stored.logits, 0, p.n, bundle_dir);
  // A modelled contract is judged around the model's dots.
  r.centre = centre_for(c, p, paged, r.judged, threads, e);
  return r;
}

namespace {

// Where the references a judgement's witness reads are: `feed` fills `kept` with the witnessed rows'
// (block by block) or points at references that hold them.
struct witness_references {
  std::vector<std::int64_t> rows;  // judge::witnessed_rows: none where the contract has no witness
  references kept;
  const references* held = &kept;
  explicit witness_references(std::vector<std::int64_t> witnessed) : rows(std::move(witnessed)) {}
  witness_references(const witness_references&) = delete;  // `held` may point into it
  witness_references& operator=(const witness_references&) = delete;
};

// The judgement of one output: its subject, the references `feed` gives the session (block by block,
// or kept ones at once), the suspicion note from the witnessed rows' references, then the
// determinism check, the order, and the diagnosis, which computes the few rows it samples again (the
// judged rows only may be held).
compare::judgement judgement_of(const bundle::bundle_inputs& b, const exact::problem& p, const paged::problem* paged,
                                const kernels::contract& c, kernels::output_view output,
                                std::optional<kernels::output_view> repeat, bool diagnose, unsigned threads,
                                const engines& e, const kernels::indices_view* indices,
                                kernels::topk_convention topk_convention,
                                const std::function<void(block_judge&, compare::judge_session&, witness_references&)>& feed) {
  compare::subject s = compare::subject_of(p, paged, c, b.spec.topk, output, threads);
  s.repeat = repeat;
  if (indices) s.indices = *indices;
  s.topk_convention = topk_convention;
  block_judge blocks(b, p, paged, c, threads, e);
  compare::judge_session session(s);
  witness_references witness(witnessed_rows(s, blocks.judged_rows()));
  feed(blocks, session, witness);
  compare::judgement j = session.finish();
  if (!witness.rows.empty()) {  // as judge::finish computes it where the whole reference is held
    compare::subject witnessed = s;
    witnessed.reference = &witness.held->judged;
    witnessed.centre = witness.held->centre_or_null();
    if (const auto counts = answer_copy_counts(witnessed); counts && suspected(*counts)) j.suspected = *counts;
  }
  finish(s, j, {.diagnose = diagnose, .launch_findings = {}}, nullptr, [&](compare::judgement& judged) {
    compare::subject evidence = s;
    evidence.judged_rows = &blocks.judged_rows();
    const std::vector<std::int64_t> needed = diagnose::rows_needed(evidence, judged);
    if (needed.empty()) return;
    const references few = blocks.few_rows(needed);
    evidence.reference = &few.judged;
    evidence.centre = few.centre_or_null();
    diagnose::explain(evidence, judged);
  });
  return j;
}

}  // namespace

compare::judgement judge_in_blocks(const bundle::bundle_inputs& b, const exact::problem& p, const paged::problem* paged,
                                   const kernels::contract& c, kernels::output_view output,
                                   std::optional<kernels::output_view> repeat, bool diagnose, unsigned threads,
                                   const engines& e, const kernels::indices_view* indices,
                                   kernels::topk_convention topk_convention) {
  return judgement_of(b, p, paged, c, output, repeat, diagnose, threads, e, indices, topk_convention,
                      [&](block_judge& blocks, compare::judge_session& session, witness_references& witness) {
                        blocks.add_blocks([&](const exact::result& reference, const exact::result* centre) {
                          session.add(reference, centre);
                          if (witness.rows.empty()) return;
                          append_rows_of(witness.kept.judged, reference, witness.rows, p.n);
                          if (centre == nullptr) return;
                          if (!witness.kept.centre) witness.kept.centre.emplace();
                          append_rows_of(*witness.kept.centre, *centre, witness.rows, p.n);
                        });
                      });
}

namespace {

// judged_references where the engines compute the reference on a GPU and every row is judged: one
// call for every row's reference and one for the centre, not a call per block (each uploads the
// inputs and cross-checks sampled elements on the CPU again). The GPU's whole reference with its
// magnitudes costs less than the CPU's magnitudes of reference.npy's logits: reference.npy is read
// only to be proven where no digest proves it, against the judged reference itself unless a NaN
// dot can tell the relu rules apart (then against a keeps-NaN reference computed here).
references whole_on_device(const bundle::bundle_inputs& b, const exact::problem& p, const kernels::contract& c,
                           unsigned threads, const engines& e, std::vector<std::int64_t> judged_rows) {
  references r;
  reference_seconds& t = r.spent;
  const exact::options eo = reference_options(c, threads);
  // reference.npy, where it is to be proven, is read by the host while the device computes.
  // Its buffer is not zeroed first: the read writes every element, and zeroing gigabytes costs as
  // much as their first touch by the read itself.
  const auto cells = static_cast<std::size_t>(p.m * p.n);
  std::future<std::unique_ptr<float[]>> reading;
  if (!b.trusted)
    reading = std::async(std::launch::async, [&b, &p, &t, cells] {
      const auto start = std::chrono::steady_clock::now();
      auto stored = std::make_unique_for_overwrite<float[]>(cells);
      bundle::read_reference_rows(b, 0, p.m, {stored.get(), cells});
      t.read += seconds_since(start);
      return stored;
    });
  auto start = std::chrono::steady_clock::now();
  r.judged = operation::exact_logits(p, nullptr, eo, e);
  t.reference += seconds_since(start);
  if (reading.valid()) {
    const std::unique_ptr<float[]> stored = reading.get();
    start = std::chrono::steady_clock::now();
    exact::result keeps_nan;
    const bool apart = c.relu != exact::relu_rule::keeps_nan && exact::relu_rule_matters(p);
    if (apart) {
      exact::options ko = eo;
      ko.relu = exact::relu_rule::keeps_nan;
      keeps_nan = operation::exact_logits(p, nullptr, ko, e);
    }
    check_stored({stored.get(), cells}, apart ? keeps_nan.logits : r.judged.logits, 0, p.n, b.dir.string());
    t.proof += seconds_since(start);
  }
  start = std::chrono::steady_clock::now();
  r.centre = centre_on(c, p, nullptr, std::move(judged_rows), threads, e);
  if (r.centre) t.centre += seconds_since(start);
  return r;
}

// Whole rows' storage for the judged rows, reserved once: appending block after block into
// gigabytes otherwise reallocates and copies them again and again.
void reserve_rows(exact::result& whole, std::size_t rows, std::int64_t n, bool bf16) {
  const std::size_t cells = rows * static_cast<std::size_t>(n);
  whole.rows.reserve(rows);
  whole.logits.reserve(cells);
  whole.magnitude.reserve(cells);
  if (bf16) whole.logits_bf16.reserve(cells);
}

}  // namespace

references judged_references(const bundle::bundle_inputs& b, const exact::problem& p, const paged::problem* paged,
                             const kernels::contract& c, unsigned threads, const engines& e) {
  references whole;
  block_judge blocks(b, p, paged, c, threads, e, &whole.spent);
  const std::size_t judged = blocks.judged_rows().size();
  if (!paged && judged == static_cast<std::size_t>(p.m) && e.on_device && e.on_device(p, reference_options(c, threads)))
    return whole_on_device(b, p, c, threads, e, blocks.judged_rows());
  const bool bf16 = c.logits == bounds::logits_precision::bf16;
  reserve_rows(whole.judged, judged, p.n, bf16);
  blocks.add_blocks([&](const exact::result& reference, const exact::result* centre) {
    const auto start = std::chrono::steady_clock::now();
    append_rows(whole.judged, reference);
    if (centre != nullptr) {
      if (!whole.centre) reserve_rows(whole.centre.emplace(), judged, p.n, bf16);
      append_rows(*whole.centre, *centre);
    }
    whole.spent.gather += seconds_since(start);
  });
  return whole;
}

compare::judgement judge_against(const references& r, const bundle::bundle_inputs& b, const exact::problem& p,
                                 const paged::problem* paged, const kernels::contract& c, kernels::output_view output,
                                 std::optional<kernels::output_view> repeat, bool diagnose, unsigned threads,
                                 const engines& e, const kernels::indices_view* indices,
                                 kernels::topk_convention topk_convention) {
  return judgement_of(b, p, paged, c, output, repeat, diagnose, threads, e, indices, topk_convention,
                      [&](block_judge&, compare::judge_session& session, witness_references& witness) {
                        session.add(r.judged, r.centre_or_null());
                        witness.held = &r;
                      });
}

std::size_t bytes_of(const references& r) {
  const auto of = [](const exact::result& x) {
    return x.rows.size() * sizeof(std::int64_t) + x.logits.size() * sizeof(float) +
           x.magnitude.size() * sizeof(double) + x.logits_bf16.size() * sizeof(float);
  };
  return of(r.judged) + (r.centre ? of(*r.centre) : 0);
}

std::size_t estimated_bytes(const bundle::bundle_inputs& b, const exact::problem& p, const paged::problem* paged,
                            const kernels::contract& c, const engines& e) {
  // Per element held: its logit (and bfloat16 rounding) and magnitude; per row, its index. Every row's reference,
  // except a modelled contract on a proven prefill bundle (block_judge::add_blocks), which holds
  // its judged rows only; a modelled contract's centre on its judged rows besides (every row where
  // the engines model on a GPU).
  const std::size_t per_row = static_cast<std::size_t>(p.n) *
                                  (sizeof(float) + sizeof(double) +
                                   (c.logits == bounds::logits_precision::bf16 ? sizeof(float) : 0)) +
                              sizeof(std::int64_t);
  const auto all_rows = static_cast<std::size_t>(p.m);
  if (bounds::traits(c.dot).model == nullptr) return all_rows * per_row;
  const std::size_t sampled = centre_rows(p, paged, cut::consecutive(0, p.m), c, e).size();
  return ((b.trusted && paged == nullptr ? sampled : all_rows) + sampled) * per_row;
}

}  // namespace mqa::judge
