#include "judging.hpp"

#include <fmt/core.h>

#include <bit>

#include "reference_engine.hpp"
#include "reports/report.hpp"
#include "validator/diagnose/diagnose.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::cli {

output_file read_output(const std::string& path, std::int64_t m, std::int64_t n) {
  const io::npy_header header = io::read_npy_header(path);
  if (header.typestring != "<f4" || header.shape.size() != 2 || static_cast<std::int64_t>(header.shape[0]) != m ||
      static_cast<std::int64_t>(header.shape[1]) < n)
    throw input_error(fmt::format("{}: expected float32 [{}, S] with S >= {} (the bundle's m and n), found {}", path, m,
                                  n, io::describe(header)));
  output_file out;
  out.values = io::read_npy<float>(path);
  out.m = m, out.n = n, out.stride = static_cast<std::int64_t>(header.shape[1]);
  return out;
}

references references_for(const bundle::bundle& b, const exact::problem& p, const paged::problem* paged,
                          const kernels::contract& c, unsigned threads, const std::string& bundle_dir) {
  auto exact_of = [&](const exact::options& eo) {
    return paged ? paged_exact_reference(*paged, eo) : exact_reference(p, eo);
  };
  exact::options eo;
  eo.relu = c.relu;
  eo.threads = threads;
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
    if (auto f = compare::compare_runs(output, *repeat, p, r.judged.rows, c.mask)) j.findings.push_back(*f);
  if (diagnose && !j.pass()) {
    diagnose::evidence e;
    e.problem = &p;
    e.paged = paged;
    e.reference = &r.judged;
    e.centre = in.centre;
    e.output = output;
    e.repeat = repeat;
    e.contract = c;
    e.topk = in.topk;
    e.threads = threads;
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
