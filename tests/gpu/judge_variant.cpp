#include "judge_variant.hpp"

#include <chrono>
#include <stdexcept>

#include "kernels/gpu/registry.hpp"
#include "validator/judge/references.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::gpu_test {

std::set<std::string> variant_verdict::classes() const {
  std::set<std::string> names;
  for (const auto& f : findings) names.emplace(compare::to_string(f.kind));
  return names;
}

std::string variant_verdict::summary() const {
  if (findings.empty()) return "pass";
  std::string s;
  for (const auto& f : findings) {
    if (!s.empty()) s += "; ";
    s += std::string(compare::to_string(f.kind)) + " x" + std::to_string(f.count) + " first (" +
         std::to_string(f.first_row) + ", " + std::to_string(f.first_col) + ")";
  }
  return s;
}

variant_verdict judge_variant(const kernels::variant& v, const owned_problem& p, const exact::result& reference,
                              output_buffers& buffers) {
  // The paged decode kernels (run_paged only) take paged problems: paged_gpu.cpp judges them.
  if (!v.run) throw std::invalid_argument("'" + v.name + "' implements the paged decode operation only");
  const exact::problem problem = p.view();
  variant_verdict verdict;
  auto start = std::chrono::steady_clock::now();
  const auto cells = static_cast<std::size_t>(p.m * p.stride);
  if (buffers.first.size() < cells || buffers.second.size() < cells) {
    buffers.first.resize(cells);
    buffers.second.resize(cells);
    buffers.allocation_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // The runner overwrites every element of [m, stride] (poison first), so reuse shows nothing stale.
  const kernels::output_view out0{buffers.first.data(), p.m, p.n, p.stride};
  const kernels::output_view out1{buffers.second.data(), p.m, p.n, p.stride};
  start = std::chrono::steady_clock::now();
  verdict.first = v.run(problem, out0, 0);
  verdict.second = v.run(problem, out1, 1);
  verdict.runs_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  start = std::chrono::steady_clock::now();
  // A modelled contract (cuda-wgmma: sm90-wgmma) is judged around the model's centre, computed on
  // the CPU for the reference's rows.
  const std::optional<exact::result> centre = judge::centre_for(v.declared, problem, nullptr, reference);
  compare::subject in;
  in.problem = &problem;
  in.reference = &reference;
  in.centre = centre ? &*centre : nullptr;
  in.output = out0;
  in.contract = v.declared;
  const compare::judgement j = compare::judge(in);
  verdict.findings = j.findings;
  verdict.stats = j.stats;
  if (auto f = compare::compare_runs(out0, out1, problem, reference.rows, v.declared.mask))
    verdict.findings.push_back(*f);
  const std::int64_t violations = verdict.first.guard_band_violations + verdict.second.guard_band_violations;
  if (violations > 0) {
    compare::finding f;
    f.kind = compare::finding_class::out_of_bounds;
    f.count = violations;
    f.detail = "guard band overwritten at float offset " + std::to_string(verdict.first.guard_band_violations > 0
                                                                             ? verdict.first.first_violation_offset
                                                                             : verdict.second.first_violation_offset);
    verdict.findings.push_back(f);
  }
  verdict.judge_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return verdict;
}

const kernels::variant& gpu_variant(std::string_view name) {
  static const std::vector<kernels::variant> all = kernels::gpu_variants();
  for (const auto& v : all)
    if (v.name == name) return v;
  throw std::out_of_range("no GPU variant named " + std::string(name));
}

}  // namespace mqa::gpu_test
