// A generated problem with its exact reference, outputs made by the CPU model (with or without a
// planted bug) or edited by hand, and the comparator plus diagnosis on them, for the diagnosis tests.
#pragma once

#include <bit>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/model.hpp"
#include "support/one_case.hpp"
#include "validator/case/load.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/diagnose/diagnose.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/references.hpp"
#include "validator/runner/runner.hpp"

namespace mqa::test {

struct bench {
  cases::case_spec spec;
  inputs::tensors t;
  exact::problem p;
  kernels::contract contract;
  exact::result reference;
  std::optional<exact::result> centre;
  std::int64_t stride = 0;

  // `keys` are the case's TOML keys besides name, m, n, heads and head_dim.
  bench(std::int64_t m, std::int64_t n, std::int64_t heads, std::int64_t head_dim, const std::string& keys = "",
        kernels::contract declared = kernels::declared_arithmetic(bounds::dot_accumulator::fp32))
      : contract(declared) {
    spec = parse_one_case({.suite = "t", .m = m, .n = n, .heads = heads, .head_dim = head_dim, .keys = keys}).cases.front();
    t = inputs::generate(spec);
    p = inputs::problem_of(spec, t);
    if (!spec.clean_logits) contract.mask = kernels::masking::dont_care;
    exact::options o;
    o.relu = contract.relu;
    reference = exact::compute(p, o);
    centre = judge::centre_for(contract, p, nullptr, reference);
    stride = runner::padded_stride(n);
  }

  std::vector<float> poisoned() const {
    return std::vector<float>(static_cast<std::size_t>(p.m * stride), std::bit_cast<float>(compare::kPoisonBits));
  }

  std::vector<float> model(const kernels::cpu::model_config& c, int launch = 0) const {
    std::vector<float> out = poisoned();
    kernels::cpu::run_model(c, p, {out.data(), p.m, p.n, stride}, launch);
    return out;
  }

  kernels::output_view view(std::vector<float>& out) const { return {out.data(), p.m, p.n, stride}; }

  compare::judgement judge(std::vector<float>& out, std::vector<float>* repeat = nullptr, bool diagnose = true,
                           double model_work = diagnose::options{}.model_work) const {
    compare::judgement j = compare::judge(evidence(out));  // launch 1 alone: the runs are compared below
    if (repeat)
      if (auto f = compare::compare_runs(view(out), view(*repeat), p, reference.rows, contract.mask))
        j.findings.push_back(*f);
    if (diagnose) diagnose::explain(evidence(out, repeat), j, {model_work});
    return j;
  }

  compare::subject evidence(std::vector<float>& out, std::vector<float>* repeat = nullptr) const {
    compare::subject e;
    e.problem = &p;
    e.reference = &reference;
    e.centre = centre ? &*centre : nullptr;
    e.output = view(out);
    if (repeat) e.repeat = view(*repeat);
    e.contract = contract;
    e.topk = spec.topk;
    return e;
  }
};

inline const compare::finding* finding_of(const compare::judgement& j, compare::finding_class c) {
  for (const auto& f : j.findings)
    if (f.kind == c) return &f;
  return nullptr;
}

}  // namespace mqa::test
