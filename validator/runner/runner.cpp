#include "runner.hpp"

#include <bit>
#include <chrono>
#include <cmath>
#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <future>
#include <stdexcept>
#include <thread>

#include "reference/mma/instruction.hpp"
#include "reference/paged/exact.hpp"
#include "validator/compare/columns.hpp"
#include "validator/diagnose/diagnose.hpp"
#include "validator/input_error.hpp"

namespace mqa::runner {
namespace {

// Every element holds the poison of the contract's output dtype (compare::poison_bits). Filled by
// every core: two production outputs are 4 GiB, which one core writes in about a second.
void poison(std::vector<float>& buffer, std::int64_t m, std::int64_t stride, const kernels::contract& c,
            unsigned threads) {
  const float value = std::bit_cast<float>(compare::poison_bits(c.logits));
  const auto size = static_cast<std::size_t>(m * stride);
  if (buffer.size() != size) {
    buffer.clear();
    buffer.shrink_to_fit();
    buffer.resize(size);  // value-initialised once; reused buffers keep their pages
  }
  threads = std::max(1u, threads ? threads : std::thread::hardware_concurrency());
  std::vector<std::jthread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::fill(buffer.begin() + static_cast<std::ptrdiff_t>(size * t / threads),
                buffer.begin() + static_cast<std::ptrdiff_t>(size * (t + 1) / threads), value);
    });
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
  exact::options o = reference_options(c, threads);
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
  // A relative kernel (issue 14) gets an [m, relative_width] output and is judged on its absolute image.
  const bool relative = v.declared.columns == kernels::columns_layout::relative;
  const std::int64_t width = relative ? compare::relative_width(p) : p.n;
  result.stride = padded_stride(width);
  auto start = clock::now();
  poison(out.first, p.m, result.stride, v.declared, threads);
  result.seconds.buffers += since(start);
  const kernels::output_view first_view{out.first.data(), p.m, width, result.stride};
  start = clock::now();
  result.launch = launch(first_view, 0);
  result.seconds.launches += since(start);
  std::vector<float> first_absolute, second_absolute;
  auto judged_view = [&](const kernels::output_view& written, std::vector<float>& absolute) -> kernels::output_view {
    if (!relative) return written;
    absolute = compare::absolute_from_relative(written, p, -INFINITY);
    return {absolute.data(), p.m, p.n, p.n};
  };
  const kernels::output_view first_judged = judged_view(first_view, first_absolute);

  // The second launch (determinism) needs nothing from the judgement: it poisons the second
  // buffer and launches on a thread of its own while the first output is judged, so a GPU
  // kernel's time hides behind the CPU's judging (issue 11). The two launches still run one after
  // the other, never together; the variant sees the same calls in the same order.
  struct second_launch {
    double buffers = 0, launches = 0;
  };
  std::future<second_launch> second;
  if (v.declared.deterministic)
    second = std::async(std::launch::async, [&] {
      second_launch s;
      auto at = clock::now();
      poison(out.second, p.m, result.stride, v.declared, threads);
      s.buffers = since(at);
      at = clock::now();
      launch(kernels::output_view{out.second.data(), p.m, width, result.stride}, 1);
      s.launches = since(at);
      return s;
    });

  compare::comparison_input in;
  in.problem = &p;
  in.paged = paged;
  in.reference = &reference;
  in.centre = centre;
  in.output = first_judged;
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
  if (second.valid()) {
    start = clock::now();
    const second_launch s = second.get();  // rethrows what the launch threw
    result.seconds.waited += since(start);
    result.seconds.buffers += s.buffers;
    result.seconds.launches += s.launches;
    result.seconds.overlapped += s.buffers + s.launches;
    second_view = judged_view(kernels::output_view{out.second.data(), p.m, width, result.stride}, second_absolute);
    start = clock::now();
    if (auto f = compare::compare_runs(first_judged, *second_view, p, reference.rows, v.declared.mask, threads))
      result.judgement.findings.push_back(*f);
    result.seconds.determinism += since(start);
  }
  std::sort(result.judgement.findings.begin(), result.judgement.findings.end(),
            [](const auto& a, const auto& b) { return a.kind < b.kind; });
  if (diagnose && diagnose::diagnosable(v.declared, p) && !result.judgement.pass()) {
    start = clock::now();
    diagnose::evidence e;
    e.problem = &p;
    e.paged = paged;
    e.reference = &reference;
    e.centre = centre;
    e.output = first_judged;
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

exact::options reference_options(const kernels::contract& c, unsigned threads) {
  exact::options o;
  o.relu = c.relu;
  o.threads = threads;
  o.bf16_logits = c.logits == bounds::logits_precision::bf16;
  return o;
}

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
