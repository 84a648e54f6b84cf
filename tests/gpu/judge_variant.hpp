// One variant on one problem, judged as the validator will: two launches (run_index 0 and 1),
// the comparator on the first against the exact reference, bitwise comparison of the two, and
// the runner's guard bands as `out-of-bounds`.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/variant.hpp"
#include "problems.hpp"
#include "reference/exact/logits.hpp"
#include "validator/compare/comparator.hpp"

namespace mqa::gpu_test {

struct variant_verdict {
  std::vector<compare::finding> findings;  // comparator, determinism and guard-band findings
  compare::metrics stats;
  kernels::launch_report first, second;
  double runs_seconds = 0;   // both launches, wall: upload, poison, kernel, guard check, download
  double judge_seconds = 0;  // comparator and run-to-run comparison

  std::set<std::string> classes() const;
  bool has(const std::string& finding_class) const { return classes().count(finding_class) != 0; }
  std::string summary() const;  // "pass" or "mask-shift x8191 (first (0, 3) ...), ..."
};

// Host memory for the two launches' outputs, reusable across variants of one problem: at full
// size each is 2 GiB, whose first touch costs more than the launches themselves.
struct output_buffers {
  std::vector<float> first, second;
  double allocation_seconds = 0;  // spent growing them, in all
};

variant_verdict judge_variant(const kernels::variant& v, const owned_problem& p, const exact::result& reference,
                              output_buffers& buffers);
inline variant_verdict judge_variant(const kernels::variant& v, const owned_problem& p,
                                     const exact::result& reference) {
  output_buffers buffers;
  return judge_variant(v, p, reference, buffers);
}

// The variant named `name` from the GPU registry (throws std::out_of_range when absent).
const kernels::variant& gpu_variant(std::string_view name);

}  // namespace mqa::gpu_test
