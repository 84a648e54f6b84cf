#include "judging.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "reference/bounds/accumulators.hpp"
#include "reference_engine.hpp"
#include "reports/report.hpp"
#include "validator/compare/columns.hpp"
#include "validator/diagnose/diagnose.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::cli {

namespace {

// What the diagnosis is given of a judged output.
diagnose::evidence evidence_of(const exact::problem& p, const paged::problem* paged, const exact::result* reference,
                               const exact::result* centre, const kernels::contract& c, std::optional<std::int64_t> topk,
                               kernels::output_view output, std::optional<kernels::output_view> repeat,
                               unsigned threads) {
  diagnose::evidence e;
  e.problem = &p;
  e.paged = paged;
  e.reference = reference;
  e.centre = centre;
  e.output = output;
  e.repeat = repeat;
  e.contract = c;
  e.topk = topk;
  e.threads = threads;
  return e;
}

std::vector<std::int64_t> consecutive(std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
  std::iota(rows.begin(), rows.end(), first);
  return rows;
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
// large file, packed in their order as judged_reference takes them.
std::vector<float> read_stored_rows(const bundle::bundle_inputs& b, const std::vector<std::int64_t>& rows,
                                    std::int64_t n) {
  const auto width = static_cast<std::size_t>(n);
  std::vector<float> out(rows.size() * width);
  for (std::size_t r = 0; r < rows.size(); ++r)
    bundle::read_reference_rows(b, rows[r], 1, std::span<float>(out).subspan(r * width, width));
  return out;
}

}  // namespace

std::int64_t output_stride(const std::string& path, std::int64_t m, std::int64_t n) {
  const io::npy_header header = io::read_npy_header(path);
  if (header.typestring != "<f4" || header.shape.size() != 2 || static_cast<std::int64_t>(header.shape[0]) != m ||
      static_cast<std::int64_t>(header.shape[1]) < n)
    throw input_error(fmt::format("{}: expected float32 [{}, S] with S >= {} (the bundle's m and n), found {}", path, m,
                                  n, io::describe(header)));
  return static_cast<std::int64_t>(header.shape[1]);
}

output_file read_output(const std::string& path, std::int64_t m, std::int64_t n) {
  output_file out;
  out.stride = output_stride(path, m, n);
  out.values = io::read_npy<float>(path);
  out.m = m, out.n = n;
  return out;
}

judged_output read_judged_output(const std::string& path, const exact::problem& p, const kernels::contract& c) {
  const bool relative = c.columns == kernels::columns_layout::relative;
  const bool bf16 = c.logits == bounds::logits_precision::bf16;
  const std::int64_t width = relative ? compare::relative_width(p) : p.n;
  const io::npy_header header = io::read_npy_header(path);
  const bool dtype_ok = bf16 ? io::is_bfloat16_typestring(header.typestring) : header.typestring == "<f4";
  if (!dtype_ok || header.shape.size() != 2 || static_cast<std::int64_t>(header.shape[0]) != p.m ||
      static_cast<std::int64_t>(header.shape[1]) < width)
    throw input_error(fmt::format(
        "{}: expected {} [{}, S] with S >= {} ({}){}, found {}", path, bf16 ? "bfloat16" : "float32", p.m, width,
        relative ? "the bundle's m and its longest window: --columns relative" : "the bundle's m and n",
        bf16 ? ": uint16 bfloat16 bits or ml_dtypes' bfloat16 (np.save writes '<V2')"
             : " (a bfloat16 output needs --logits-dtype bf16)",
        io::describe(header)));
  judged_output out;
  out.m = p.m, out.n = p.n, out.stride = static_cast<std::int64_t>(header.shape[1]);
  if (bf16) {
    const xt::xarray<float> widened = io::read_bfloat16_npy(path);
    out.values.assign(widened.begin(), widened.end());
  } else if (!relative && io::mapped_floats::mappable(header) && (out.mapped = io::mapped_floats::map(path))) {
    // mapped: its pages are read as the comparator judges them
  } else {
    out.values = io::read_npy_vector<float>(path);
  }
  if (relative) {
    out.values = compare::absolute_from_relative({out.values.data(), p.m, width, out.stride}, p, -INFINITY);
    out.stride = p.n;
  }
  return out;
}

references references_for(const bundle::bundle& b, const exact::problem& p, const paged::problem* paged,
                          const kernels::contract& c, unsigned threads, const std::string& bundle_dir) {
  auto exact_of = [&](const exact::options& eo) {
    return paged ? paged_exact_reference(*paged, eo) : exact_reference(p, eo);
  };
  exact::options eo = runner::reference_options(c, threads);
  references r;
  r.judged = exact_of(eo);
  // reference.npy is the keeps-NaN reference of the bundle's inputs (cases/README.md).
  exact::result keeps_nan;
  if (c.relu != exact::relu_rule::keeps_nan) {
    exact::options ko = eo;
    ko.relu = exact::relu_rule::keeps_nan;
    keeps_nan = exact_of(ko);
  }
  const exact::result& stored = c.relu == exact::relu_rule::keeps_nan ? r.judged : keeps_nan;
  const auto n = static_cast<std::size_t>(p.n);
  for (std::size_t x = 0; x < stored.logits.size(); ++x)
    if (std::bit_cast<std::uint32_t>(stored.logits[x]) != std::bit_cast<std::uint32_t>(b.reference[x]))
      throw input_error(fmt::format("{}/reference.npy: element ({}, {}) differs from the exact reference of the "
                                    "bundle's inputs: the bundle was modified or mixed up",
                                    bundle_dir, x / n, x % n));
  // A modelled contract is judged around the model's dots (runner::centre_for).
  r.centre = paged ? runner::centre_for(c, *paged, p, r.judged, threads) : runner::centre_for(c, p, r.judged, threads);
  return r;
}

compare::judgement judge_output(const exact::problem& p, const paged::problem* paged, const references& r,
                                const kernels::contract& c, std::optional<std::int64_t> topk,
                                kernels::output_view output, std::optional<kernels::output_view> repeat, bool diagnose,
                                unsigned threads) {
  compare::comparison_input in;
  in.problem = &p;
  in.paged = paged;
  in.reference = &r.judged;
  in.centre = r.centre ? &*r.centre : nullptr;
  in.output = output;
  in.contract = c;
  in.topk = topk;
  // A harness that pre-fills its output with mqacheck's poison (float32 bits 0x7FC0DEAD) gets
  // `unwritten` for what the kernel never stored; no arithmetic produces that payload.
  in.poisoned = true;
  in.threads = threads;
  compare::judgement j = compare::judge(in);
  if (repeat)
    if (auto f = compare::compare_runs(output, *repeat, p, r.judged.rows, c.mask, threads)) j.findings.push_back(*f);
  if (diagnose && diagnose::diagnosable(c, p) && !j.pass())
    diagnose::explain(evidence_of(p, paged, &r.judged, in.centre, c, topk, output, repeat, threads), j);
  return j;
}

compare::judgement judge_in_blocks(const bundle::bundle_inputs& b, const exact::problem& p, const paged::problem* paged,
                                   const kernels::contract& c, kernels::output_view output,
                                   std::optional<kernels::output_view> repeat, bool diagnose, unsigned threads) {
  const std::string bundle_dir = b.dir.string();
  const std::int64_t m = p.m, n = p.n;
  auto exact_of = [&](const exact::options& eo) {
    return paged ? paged_exact_reference(*paged, eo) : exact_reference(p, eo);
  };
  // Elements whose inputs are all finite are the same under either relu rule: a prefill
  // reference.npy proven (by its digest, or by the keeps-NaN reference computed here) gives them,
  // and only the magnitude and the elements a non-finite input touches are computed. A paged
  // problem's dense pieces have rows and keys of their own: it is computed in full.
  auto judged_reference = [&](exact::options eo, std::span<const float> stored, std::int64_t first) {
    if (paged) return exact_of(eo);
    std::vector<float> some;  // a modelled contract's sampled rows of the block
    if (eo.rows.size() * static_cast<std::size_t>(n) == stored.size()) {
      eo.known_logits = stored;
    } else {
      some = stored_rows(stored, first, n, eo.rows);
      eo.known_logits = some;
    }
    return exact::compute(p, eo);
  };
  // A modelled contract's centre: its rows chosen once over the whole output, as centre_for
  // would choose them from a whole reference.
  const bool modelled = bounds::traits(c.dot).model != nullptr;
  const std::vector<std::int64_t> judged_rows = modelled ? runner::centre_rows(p, consecutive(0, m)) : consecutive(0, m);
  auto centre_on = [&](std::vector<std::int64_t> rows) {
    return paged ? runner::centre_on(c, *paged, p, std::move(rows), threads) : runner::centre_on(c, p, std::move(rows), threads);
  };
  // Reference and centre of a few rows, reference.npy read row by row (judged_reference: a paged
  // bundle computes them from its cache).
  struct judged_pair {
    exact::result reference;
    std::optional<exact::result> centre;
  };
  auto few_rows = [&](const std::vector<std::int64_t>& rows) {
    exact::options eo = runner::reference_options(c, threads);
    eo.rows = rows;
    return judged_pair{judged_reference(eo, read_stored_rows(b, rows, n), 0), centre_on(rows)};
  };

  compare::comparison_input in;
  in.problem = &p;
  in.paged = paged;
  in.output = output;
  in.contract = c;
  in.topk = b.spec.topk;
  // A harness that pre-fills its output with mqacheck's poison (float32 bits 0x7FC0DEAD) gets
  // `unwritten` for what the kernel never stored; no arithmetic produces that payload.
  in.poisoned = true;
  in.threads = threads;
  compare::judge_session session(in);
  const std::int64_t block = block_rows(m, n);
  std::vector<float> stored;
  // A modelled contract on a digest-proven prefill bundle judges a few sampled rows: their
  // reference and centre in one call each (a call per block prepared every key again for each row:
  // decoded, packed and split into the model's operands, 65536 keys per sampled row).
  const bool sampled_at_once = modelled && b.trusted && !paged;
  if (sampled_at_once) {
    const judged_pair judged = few_rows(judged_rows);
    session.add(judged.reference, judged.centre ? &*judged.centre : nullptr);
  }
  for (std::int64_t first = 0; first < m && !sampled_at_once; first += block) {
    const std::int64_t count = std::min(block, m - first);
    std::vector<std::int64_t> rows;  // this block's share of the judged rows
    std::copy_if(judged_rows.begin(), judged_rows.end(), std::back_inserter(rows),
                 [&](std::int64_t i) { return i >= first && i < first + count; });
    if (b.trusted && static_cast<std::int64_t>(rows.size()) < count) {
      // The digest proved reference.npy: only the judged rows are read (a modelled contract's few
      // sampled rows of a large output), in their order, as judged_reference takes them.
      stored = read_stored_rows(b, rows, n);
    } else {
      stored.resize(static_cast<std::size_t>(count * n));
      bundle::read_reference_rows(b, first, count, stored);
    }
    exact::options eo = runner::reference_options(c, threads);
    exact::result reference;
    if (!b.trusted) {
      // No digest proves reference.npy is the keeps-NaN reference of these inputs (cases/README.md):
      // every row of it is compared with one computed here.
      exact::options ko = eo;
      ko.relu = exact::relu_rule::keeps_nan;
      ko.rows = consecutive(first, count);
      exact::result keeps_nan = exact_of(ko);
      for (std::size_t x = 0; x < stored.size(); ++x)
        if (std::bit_cast<std::uint32_t>(stored[x]) != std::bit_cast<std::uint32_t>(keeps_nan.logits[x]))
          throw input_error(fmt::format("{}/reference.npy: element ({}, {}) differs from the exact reference of the "
                                        "bundle's inputs: the bundle was modified or mixed up",
                                        bundle_dir, first + static_cast<std::int64_t>(x) / n,
                                        static_cast<std::int64_t>(x) % n));
      if (c.relu == exact::relu_rule::keeps_nan) reference = std::move(keeps_nan);
    }
    if (rows.empty()) continue;
    if (reference.rows.empty()) {
      eo.rows = rows;
      reference = judged_reference(eo, stored, first);
    }
    const std::optional<exact::result> centre = centre_on(rows);
    session.add(reference, centre ? &*centre : nullptr);
  }
  compare::judgement j = session.finish();
  if (repeat)
    if (auto f = compare::compare_runs(output, *repeat, p, consecutive(0, m), c.mask, threads)) j.findings.push_back(*f);
  if (diagnose && diagnose::diagnosable(c, p) && !j.pass()) {
    // The diagnosis reads a few sampled rows of the reference and centre: those are computed again.
    diagnose::evidence e = evidence_of(p, paged, nullptr, nullptr, c, b.spec.topk, output, repeat, threads);
    e.judged_rows = &judged_rows;
    const std::vector<std::int64_t> needed = diagnose::rows_needed(e, j);
    if (needed.empty()) return j;
    const judged_pair judged = few_rows(needed);
    e.reference = &judged.reference;
    e.centre = judged.centre ? &*judged.centre : nullptr;
    diagnose::explain(e, j);
  }
  return j;
}

void print_judgement(const std::string& shown, const compare::judgement& j, const std::string& case_name,
                     const kernels::contract& c) {
  const compare::metrics& m = j.stats;
  fmt::print("{}: {} ({} under {})\n", shown, j.pass() ? "pass" : "FAIL", case_name, kernels::describe(c));
  if (m.ulps.total == 0)
    fmt::print("  none compared: no finite in-window pair  top-k recall {}\n", reports::shown(m.topk_recall(), 4));
  else
    fmt::print("  max ULP {}  p50 {}  p99 {}  p99.9 {}  exact {:.4f}  <=1 ULP {:.4f}  max err/bound {}  top-k recall {}\n",
               m.ulps.max, m.ulps.percentile(0.5), m.ulps.percentile(0.99), m.ulps.percentile(0.999), *m.share_exact(),
               *m.share_within_one_ulp(), reports::shown(m.max_error_over_bound()), reports::shown(m.topk_recall(), 4));
  for (const auto& f : j.findings) fmt::print("  {}\n", reports::describe(f));
  for (const auto& n : j.notes) fmt::print("  note: {}\n", n);
}

}  // namespace mqa::cli
