// The power a bit-exact matrix-unit model buys: at DeepSeek's shape
// (H = 64, D = 128) the subtle bugs of a Hopper fp8 kernel are caught under sm90-wgmma, while the
// loose fp22-truncated bound, the best a kernel of that arithmetic could declare before, lets most
// of them through. The factors are max error / bound (> 1: caught); reference/bounds/README.md
// tabulates them.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <map>

#include "kernels/registry/registry.hpp"
#include "validator/case/load.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/references.hpp"
#include "validator/runner/runner.hpp"

using namespace mqa;

namespace {

double worst_under(kernels::variant v, bounds::dot_accumulator dot, const exact::problem& p, const exact::result& ref) {
  v.declared.dot = dot;
  const auto centre = judge::centre_for(v.declared, p, nullptr, ref);
  const runner::outcome out = runner::run(v, p, nullptr, ref, centre ? &*centre : nullptr, std::nullopt, 2);
  return out.judgement.stats.max_error_over_bound().value_or(0);
}

}  // namespace

TEST_CASE("subtle Hopper bugs are caught under sm90-wgmma and hide under fp22-truncated", "[kernels][mma][power]") {
  const cases::suite s = cases::load_suite(std::string(MQA_SOURCE_DIR) + "/cases/bugs/mma-subtle.toml");
  const cases::case_spec& c = cases::find_case(s, "causal");
  const inputs::tensors t = inputs::generate(c);
  const exact::problem p = inputs::problem_of(c, t);
  const exact::result ref = exact::compute(p);
  int hidden_under_fp22 = 0;
  for (const char* name : {"mutant-sm90-dropped-head", "mutant-sm90-dropped-last-element", "mutant-sm90-weights-off",
                           "mutant-sm90-scale-off", "mutant-sm90-bf16-dot"}) {
    const kernels::variant& v = *kernels::find_variant(name);
    const double modelled = worst_under(v, bounds::dot_accumulator::sm90_wgmma, p, ref);
    const double loose = worst_under(v, bounds::dot_accumulator::fp22_truncated, p, ref);
    WARN(fmt::format("{}: max error/bound {:.3g} under sm90-wgmma, {:.3g} under fp22-truncated", name, modelled, loose));
    CHECK(modelled > 1);
    hidden_under_fp22 += loose <= 1;
  }
  CHECK(hidden_under_fp22 >= 3);
  // The correct kernel itself, for the table's first row.
  const double correct = worst_under(*kernels::find_variant("sm90-wgmma"), bounds::dot_accumulator::sm90_wgmma, p, ref);
  WARN(fmt::format("sm90-wgmma: max error/bound {:.3g}", correct));
  CHECK(correct < 1);
}
