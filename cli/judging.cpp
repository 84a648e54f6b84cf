#include "judging.hpp"

#include <fmt/core.h>

#include <cmath>

#include "reports/report.hpp"
#include "validator/compare/columns.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/judge/suspicion.hpp"

namespace mqa::cli {

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

void print_judgement(const std::string& shown, const compare::judgement& j, const std::string& case_name,
                     const kernels::contract& c) {
  const compare::metrics& m = j.stats;
  fmt::print("{}: {} ({} under {})\n", shown, j.pass() ? "pass" : "FAIL", case_name, kernels::describe(c));
  if (m.ulps.total == 0) {
    fmt::print("  none compared: no finite in-window pair  top-k recall {}\n", reports::shown(m.topk_recall(), 4));
  } else {
    // The condition-free scales first (compare/ulp_scales.hpp), then the raw ULPs.
    const compare::fractional_ulp_histogram& a = m.scaled.magnitude;
    fmt::print("  ULPs of A: p50 {}  p99 {}  p99.9 {}  max {}  well conditioned ({:.4f} of compared): p99 {} ULP  max {} ULP\n",
               reports::shown(a.percentile(0.5)), reports::shown(a.percentile(0.99)), reports::shown(a.percentile(0.999)),
               reports::shown(a.max()), *m.share_well_conditioned(), reports::shown_ulps(m.scaled.conditioned, 0.99),
               reports::shown_ulps(m.scaled.conditioned, 1));
    fmt::print("  raw: max ULP {}  p50 {}  p99 {}  p99.9 {}  exact {:.4f}  <=1 ULP {:.4f}  max err/bound {}  top-k recall {}\n",
               m.ulps.max, m.ulps.percentile(0.5), m.ulps.percentile(0.99), m.ulps.percentile(0.999), *m.share_exact(),
               *m.share_within_one_ulp(), reports::shown(m.max_error_over_bound()), reports::shown(m.topk_recall(), 4));
  }
  if (const topk::decidedness_summary& d = m.decidedness; d.rows > 0)
    fmt::print("  top-k decidedness: {}/{} rows fully decided, median {} ambiguous keys per row; of the {} rows longer "
               "than k, {} fully decided, median {} ambiguous; worst row {}: {} ambiguous of k = {}\n",
               d.rows_fully_decided, d.rows, d.median_ambiguous, d.rows_ranked, d.rows_ranked_fully_decided,
               d.median_ambiguous_ranked, d.worst_row, d.worst_ambiguous, d.worst_k);
  for (const auto& f : j.findings) fmt::print("  {}\n", reports::describe(f));
  for (const auto& n : j.notes) fmt::print("  note: {}\n", n);
  if (j.suspected) fmt::print("  {}\n", judge::suspicion_note(*j.suspected));
}

}  // namespace mqa::cli
