// A CPU arithmetic model (kernels/cpu/registry.hpp) run on a case whose head sums cancel, and its
// output judged under the model's own contract: what the ULP-scale tests measure.
#pragma once

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/registry.hpp"
#include "validator/case/load.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/references.hpp"

namespace mqa::test {

// A prefill case with 64 heads of standard normal weights (both signs, as every generated case):
// many exact logits are a small difference of large head terms.
inline const cases::case_spec& cancelling_case() {
  static const cases::suite s = cases::parse_suite(R"([suite]
name = "scales"
[[case]]
name = "cancelling"
m = 24
n = 160
heads = 64
head_dim = 64
seed = 11
layout = { kind = "causal" }
)",
                                                   "scales.toml");
  return s.cases[0];
}

// The named model's output on the cancelling case, judged under its declared contract; `edit`
// changes the model's configuration first (a head-sum order, say), the contract kept.
inline compare::judgement judged_model(const std::string& name, void (*edit)(kernels::cpu::model_config&) = nullptr) {
  const inputs::tensors t = inputs::generate(cancelling_case());
  const exact::problem p = inputs::problem_of(cancelling_case(), t);
  for (const auto& model : kernels::cpu::arithmetic_models()) {
    if (model.name != name) continue;
    kernels::cpu::model_config config = model.config;
    if (edit) edit(config);
    std::vector<float> out(static_cast<std::size_t>(p.m * p.n));
    const kernels::output_view view{out.data(), p.m, p.n, p.n};
    kernels::cpu::run_model(config, p, view, 0);
    const exact::result reference = exact::compute(p, judge::reference_options(model.declared));
    const std::optional<exact::result> centre = judge::centre_for(model.declared, p, nullptr, reference);
    compare::subject in;
    in.problem = &p;
    in.reference = &reference;
    in.centre = centre ? &*centre : nullptr;
    in.output = view;
    in.contract = model.declared;
    return compare::judge(in);
  }
  FAIL("no arithmetic model " << name);
  return {};
}

}  // namespace mqa::test
