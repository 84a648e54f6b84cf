#include "runner.hpp"

#include <bit>
#include <chrono>
#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "reference/mma/instruction.hpp"
#include "reference/paged/exact.hpp"
#include "validator/diagnose/diagnose.hpp"
#include "validator/input_error.hpp"

namespace mqa::runner {
namespace {

void poison(std::vector<float>& buffer, std::int64_t m, std::int64_t stride) {
  buffer.assign(static_cast<std::size_t>(m * stride), std::bit_cast<float>(compare::kPoisonBits));
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

using engine = std::function<exact::result(const exact::options&)>;

// `p` stands for the rows (a paged problem's rows_view); `compute` is the operation's reference.
std::optional<exact::result> centre_with(const kernels::contract& c, const exact::problem& p,
                                         std::vector<std::int64_t> rows, unsigned threads, const engine& compute) {
  const mma::instruction* model = mma::instruction_for(c.dot);
  if (model == nullptr) return std::nullopt;
  if (const auto why = mma::why_unusable(*model, p.q_format, p.k_format, p.head_dim, c.promote_every))
    throw input_error(*why);
  exact::options o;
  o.relu = c.relu;
  o.threads = threads;
  o.rows = std::move(rows);
  o.dot_model = model;
  o.promote_every = c.promote_every;
  return compute(o);
}

using launcher = std::function<kernels::launch_report(const kernels::output_view&, int run_index)>;

outcome run_with(const kernels::variant& v, const launcher& launch, const exact::problem& p, const paged::problem* paged,
                 const exact::result& reference, const exact::result* centre, std::optional<std::int64_t> topk,
                 unsigned threads, bool diagnose, buffers* reuse) {
  using clock = std::chrono::steady_clock;
  outcome result;
  buffers own;
  buffers& out = reuse != nullptr ? *reuse : own;
  result.stride = padded_stride(p.n);
  auto start = clock::now();
  poison(out.first, p.m, result.stride);
  result.seconds.buffers += since(start);
  const kernels::output_view first_view{out.first.data(), p.m, p.n, result.stride};
  start = clock::now();
  result.launch = launch(first_view, 0);
  result.seconds.launches += since(start);

  compare::comparison_input in;
  in.problem = &p;
  in.paged = paged;
  in.reference = &reference;
  in.centre = centre;
  in.output = first_view;
  in.contract = v.declared;
  in.topk = topk;
  in.poisoned = true;
  in.threads = threads;
  start = clock::now();
  result.judgement = compare::judge(in);
  result.seconds.judge += since(start);

  if (result.launch.guard_band_violations > 0) {
    compare::finding f;
    f.kind = compare::finding_class::out_of_bounds;
    f.count = result.launch.guard_band_violations;
    f.detail = fmt::format("writes outside the output buffer: {} canary words overwritten, the first at offset {} "
                           "floats from the output's start",
                           result.launch.guard_band_violations, result.launch.first_violation_offset);
    result.judgement.findings.push_back(f);
  }
  std::optional<kernels::output_view> second_view;
  if (v.declared.deterministic) {
    start = clock::now();
    poison(out.second, p.m, result.stride);
    result.seconds.buffers += since(start);
    second_view = kernels::output_view{out.second.data(), p.m, p.n, result.stride};
    start = clock::now();
    launch(*second_view, 1);
    result.seconds.launches += since(start);
    start = clock::now();
    if (auto f = compare::compare_runs(first_view, *second_view, p, reference.rows, v.declared.mask))
      result.judgement.findings.push_back(*f);
    result.seconds.determinism += since(start);
  }
  std::sort(result.judgement.findings.begin(), result.judgement.findings.end(),
            [](const auto& a, const auto& b) { return a.kind < b.kind; });
  if (diagnose && !result.judgement.pass()) {
    start = clock::now();
    diagnose::evidence e;
    e.problem = &p;
    e.paged = paged;
    e.reference = &reference;
    e.centre = centre;
    e.output = first_view;
    e.repeat = second_view;
    e.contract = v.declared;
    e.topk = topk;
    e.threads = threads;
    diagnose::explain(e, result.judgement);
    result.seconds.diagnosis += since(start);
  }
  return result;
}

}  // namespace

std::int64_t padded_stride(std::int64_t n) { return (n + 63) / 64 * 64 + 64; }

std::vector<std::int64_t> centre_rows(const exact::problem& p, const std::vector<std::int64_t>& rows) {
  // The model runs on the CPU: past about 2^34 multiply-adds (seconds on a few cores) it is
  // computed for sampled rows (first, last, window edges, then random ones), which are judged.
  const double work = static_cast<double>(p.n) * static_cast<double>(p.heads) * static_cast<double>(p.head_dim);
  const auto budget = static_cast<std::size_t>(std::max(16.0, 0x1p34 / std::max(work, 1.0)));
  if (rows.size() <= budget) return rows;
  std::vector<std::int64_t> sampled;
  for (const auto i : exact::sample_rows(p, budget, 0x5A3D1E5ull))
    if (std::binary_search(rows.begin(), rows.end(), i)) sampled.push_back(i);
  return sampled;
}

std::optional<exact::result> centre_for(const kernels::contract& c, const exact::problem& p,
                                        const exact::result& reference, unsigned threads) {
  return centre_on(c, p, centre_rows(p, reference.rows), threads);
}

std::optional<exact::result> centre_for(const kernels::contract& c, const paged::problem& p, const exact::problem& rows,
                                        const exact::result& reference, unsigned threads) {
  return centre_on(c, p, rows, centre_rows(rows, reference.rows), threads);
}

std::optional<exact::result> centre_on(const kernels::contract& c, const exact::problem& p,
                                       std::vector<std::int64_t> rows, unsigned threads) {
  return centre_with(c, p, std::move(rows), threads, [&](const exact::options& o) { return exact::compute(p, o); });
}

std::optional<exact::result> centre_on(const kernels::contract& c, const paged::problem& p,
                                       const exact::problem& rows_view, std::vector<std::int64_t> rows,
                                       unsigned threads) {
  return centre_with(c, rows_view, std::move(rows), threads,
                     [&](const exact::options& o) { return paged::compute(p, o); });
}

outcome run(const kernels::variant& v, const exact::problem& p, const exact::result& reference,
            const exact::result* centre, std::optional<std::int64_t> topk, unsigned threads, bool diagnose,
            buffers* reuse) {
  if (!v.run) throw std::invalid_argument(fmt::format("variant '{}' implements the paged operation only", v.name));
  return run_with(
      v, [&](const kernels::output_view& out, int index) { return v.run(p, out, index); }, p, nullptr, reference,
      centre, topk, threads, diagnose, reuse);
}

outcome run(const kernels::variant& v, const paged::problem& p, const exact::problem& rows,
            const exact::result& reference, const exact::result* centre, std::optional<std::int64_t> topk,
            unsigned threads, bool diagnose, buffers* reuse) {
  if (!v.run_paged) throw std::invalid_argument(fmt::format("variant '{}' implements the prefill operation only", v.name));
  return run_with(
      v, [&](const kernels::output_view& out, int index) { return v.run_paged(p, out, index); }, rows, &p, reference,
      centre, topk, threads, diagnose, reuse);
}

}  // namespace mqa::runner
