#include "runner.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <fmt/core.h>

#include <stdexcept>

#include "reference/mma/instruction.hpp"
#include "validator/input_error.hpp"

namespace mqa::runner {
namespace {

void poison(std::vector<float>& buffer, std::int64_t m, std::int64_t stride) {
  buffer.assign(static_cast<std::size_t>(m * stride), std::bit_cast<float>(compare::kPoisonBits));
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::int64_t padded_stride(std::int64_t n) { return (n + 63) / 64 * 64 + 64; }

std::optional<exact::result> centre_for(const kernels::contract& c, const exact::problem& p,
                                        const exact::result& reference, unsigned threads) {
  const mma::instruction* model = mma::instruction_for(c.dot);
  if (model == nullptr) return std::nullopt;
  if (const auto why = mma::why_unusable(*model, p.q_format, p.k_format, p.head_dim, c.promote_every))
    throw input_error(*why);
  exact::options o;
  o.relu = c.relu;
  o.threads = threads;
  o.rows = reference.rows;
  o.dot_model = model;
  o.promote_every = c.promote_every;
  return exact::compute(p, o);
}

outcome run(const kernels::variant& v, const exact::problem& p, const exact::result& reference,
            const exact::result* centre, std::optional<std::int64_t> topk, unsigned threads, buffers* reuse) {
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
  result.launch = v.run(p, first_view, 0);
  result.seconds.launches += since(start);

  compare::comparison_input in;
  in.problem = &p;
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
  if (v.declared.deterministic) {
    start = clock::now();
    poison(out.second, p.m, result.stride);
    result.seconds.buffers += since(start);
    const kernels::output_view second_view{out.second.data(), p.m, p.n, result.stride};
    start = clock::now();
    v.run(p, second_view, 1);
    result.seconds.launches += since(start);
    start = clock::now();
    if (auto f = compare::compare_runs(first_view, second_view, p, reference.rows, v.declared.mask))
      result.judgement.findings.push_back(*f);
    result.seconds.determinism += since(start);
  }
  std::sort(result.judgement.findings.begin(), result.judgement.findings.end(),
            [](const auto& a, const auto& b) { return a.kind < b.kind; });
  return result;
}

}  // namespace mqa::runner
