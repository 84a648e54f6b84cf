#include "runner.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "reference/mma/instruction.hpp"
#include "validator/compare/columns.hpp"
#include "validator/input_error.hpp"

namespace mqa::runner {
namespace {

std::vector<float> poisoned_buffer(std::int64_t m, std::int64_t stride, const kernels::contract& c) {
  return std::vector<float>(static_cast<std::size_t>(m * stride), std::bit_cast<float>(compare::poison_bits(c.logits)));
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

std::optional<exact::result> centre_for(const kernels::contract& c, const exact::problem& p,
                                        const exact::result& reference, unsigned threads) {
  const mma::instruction* model = mma::instruction_for(c.dot);
  if (model == nullptr) return std::nullopt;
  if (const auto why = mma::why_unusable(*model, p.q_format, p.k_format, p.head_dim, c.promote_every))
    throw input_error(*why);
  exact::options o = reference_options(c, threads);
  o.rows = reference.rows;
  // The model runs on the CPU: past about 2^34 multiply-adds (seconds on a few cores) it is
  // computed for sampled rows (first, last, window edges, then random ones), which are judged.
  const double work = static_cast<double>(p.n) * static_cast<double>(p.heads) * static_cast<double>(p.head_dim);
  const auto budget = static_cast<std::size_t>(std::max(16.0, 0x1p34 / std::max(work, 1.0)));
  if (o.rows.size() > budget) {
    std::vector<std::int64_t> sampled;
    for (const auto i : exact::sample_rows(p, budget, 0x5A3D1E5ull))
      if (std::binary_search(reference.rows.begin(), reference.rows.end(), i)) sampled.push_back(i);
    o.rows = std::move(sampled);
  }
  o.dot_model = model;
  o.promote_every = c.promote_every;
  return exact::compute(p, o);
}

outcome run(const kernels::variant& v, const exact::problem& p, const exact::result& reference,
            const exact::result* centre, std::optional<std::int64_t> topk, unsigned threads) {
  outcome result;
  // A relative kernel gets an [m, relative_width] output and is judged on its absolute image.
  const bool relative = v.declared.columns == kernels::columns_layout::relative;
  const std::int64_t width = relative ? compare::relative_width(p) : p.n;
  result.stride = padded_stride(width);
  std::vector<float> first = poisoned_buffer(p.m, result.stride, v.declared);
  const kernels::output_view first_view{first.data(), p.m, width, result.stride};
  result.launch = v.run(p, first_view, 0);
  std::vector<float> first_absolute;
  auto judged_view = [&](const kernels::output_view& written, std::vector<float>& absolute) -> kernels::output_view {
    if (!relative) return written;
    absolute = compare::absolute_from_relative(written, p, -INFINITY);
    return {absolute.data(), p.m, p.n, p.n};
  };
  const kernels::output_view first_judged = judged_view(first_view, first_absolute);

  compare::comparison_input in;
  in.problem = &p;
  in.reference = &reference;
  in.centre = centre;
  in.output = first_judged;
  in.contract = v.declared;
  in.topk = topk;
  in.poisoned = true;
  in.threads = threads;
  result.judgement = compare::judge(in);

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
    std::vector<float> second = poisoned_buffer(p.m, result.stride, v.declared);
    const kernels::output_view second_view{second.data(), p.m, width, result.stride};
    v.run(p, second_view, 1);
    std::vector<float> second_absolute;
    if (auto f = compare::compare_runs(first_judged, judged_view(second_view, second_absolute), p, reference.rows,
                                       v.declared.mask))
      result.judgement.findings.push_back(*f);
  }
  std::sort(result.judgement.findings.begin(), result.judgement.findings.end(),
            [](const auto& a, const auto& b) { return a.kind < b.kind; });
  return result;
}

}  // namespace mqa::runner
