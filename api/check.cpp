#include "check.hpp"

#include <fmt/core.h>

#include "api/reference_engine.hpp"
#include "reports/report.hpp"
#include "validator/input_error.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/bundle.hpp"
#include "validator/verdict/report_document.hpp"

namespace mqa::api {

std::unique_ptr<bundle_under_check> open_bundle(const std::string& dir, const contract_options& declared,
                                                bundle::digest_use use) {
  kernels::contract c = declared.contract();
  auto b = std::make_unique<bundle_under_check>();
  // The case and inputs only: reference.npy is read block by block (judge_in_blocks).
  b->dir = dir;
  b->inputs = bundle::load_bundle_inputs(dir, use);
  const inputs::tensors& t = b->inputs.inputs;
  if (!declared.mask() && c.columns == kernels::columns_layout::absolute)
    c.mask = b->inputs.spec.clean_logits ? kernels::masking::clean : kernels::masking::dont_care;
  // A paged bundle is judged by its rows (problem: no keys) and its cache (paged).
  b->problem = inputs::problem_of(b->inputs.spec, t);
  if (t.paged) b->paged = inputs::paged_problem_of(b->inputs.spec, t);
  if (b->paged && (c.columns == kernels::columns_layout::relative || c.logits == bounds::logits_precision::bf16))
    throw input_error(fmt::format("{}: a paged bundle is judged with float32 absolute columns (accepted: --columns "
                                  "absolute and --logits-dtype fp32; bf16 logits and relative columns are the prefill "
                                  "kernel's)",
                                  dir));
  b->contract = c;
  return b;
}

compare::judgement judge_output(const bundle_under_check& b, kernels::output_view output,
                                std::optional<kernels::output_view> repeat, const judge_options& o) {
  const paged::problem* paged = b.paged ? &*b.paged : nullptr;
  const auto engines = reference_engines();
  // References that could never be kept are not gathered: judged block by block, one block held.
  if (o.references == nullptr ||
      judge::estimated_bytes(b.inputs, b.problem, paged, b.contract, engines) > o.references->capacity())
    return judge::judge_in_blocks(b.inputs, b.problem, paged, b.contract, output, repeat, o.diagnose, o.threads,
                                  engines, o.topk_indices, o.topk_convention);
  std::shared_ptr<const judge::references> kept = o.references->find(&b);
  if (!kept) {
    kept = std::make_shared<const judge::references>(
        judge::judged_references(b.inputs, b.problem, paged, b.contract, o.threads, engines));
    o.references->put(&b, kept);
  }
  return judge::judge_against(*kept, b.inputs, b.problem, paged, b.contract, output, repeat, o.diagnose, o.threads,
                              engines, o.topk_indices, o.topk_convention);
}

nlohmann::json judgement_document(const bundle_under_check& b, const compare::judgement& j,
                                  const std::string& logits_shown) {
  nlohmann::json out = reports::judgement_json(j);
  out["schema"] = "mqacheck.check";
  out["schema_version"] = verdict::kSchemaVersion;
  out["bundle"] = b.dir;
  out["logits"] = logits_shown;
  out["case"] = b.inputs.spec.name;
  out["contract"] = kernels::describe(b.contract);
  return out;
}

}  // namespace mqa::api
