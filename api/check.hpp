// `check` as a library call: one output, from a file or from memory, judged against a bundle under
// a declared contract, through the one judge (validator/judge). The command line's `check` and the
// Python extension (python/core) both go through here, so that a verdict is the same whichever way
// it is asked for.
//
//   const api::bundle_under_check b = api::open_bundle(dir, declared, bundle::digest_use::verify);
//   const compare::judgement j = api::judge_output(b, out.view(), std::nullopt, {.diagnose = true});
//   nlohmann::json doc = api::judgement_document(b, j, "logits.npy");   // check --json's document
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/contract_options.hpp"
#include "api/output.hpp"
#include "api/reference_store.hpp"
#include "kernels/contract.hpp"
#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/judge/bundle.hpp"
#include "validator/judge/judge.hpp"

namespace mqa::api {

// A bundle read and proven (as `use` says) with the contract it is judged under. Its problem
// points into its own inputs: it is neither copied nor moved.
struct bundle_under_check {
  std::string dir;  // as given
  bundle::bundle_inputs inputs;
  exact::problem problem;                // a paged bundle's rows
  std::optional<paged::problem> paged;   // a paged bundle's cache
  kernels::contract contract;            // masking from the bundle's clean_logits where --mask is not given

  bundle_under_check() = default;
  bundle_under_check(const bundle_under_check&) = delete;
  bundle_under_check& operator=(const bundle_under_check&) = delete;
};

// Throws input_error for a bundle that is not one, was modified, or is paged under a contract only
// the prefill kernel has (bf16 logits, relative columns).
std::unique_ptr<bundle_under_check> open_bundle(const std::string& dir, const contract_options& declared,
                                                bundle::digest_use use);

struct judge_options {
  bool diagnose = true;  // findings name the planted bug mqacheck's model reproduces them with
  unsigned threads = 0;  // 0: every core
  // Where the bundle's references are kept between judgements (keyed by the bundle_under_check's
  // address: a store outlives the judgements, the caller forgets a bundle it closes). Null: judged
  // block by block, nothing kept.
  reference_store* references = nullptr;
  // A top-k index kernel's output judged beside the logits (validator/compare/topk_indices.hpp).
  const kernels::indices_view* topk_indices = nullptr;
  kernels::topk_convention topk_convention = {};
};

// `repeat`: the same kernel's second launch, compared bit for bit where the contract promises
// determinism. The judgement is the same with or without a reference store.
compare::judgement judge_output(const bundle_under_check& b, kernels::output_view output,
                                std::optional<kernels::output_view> repeat, const judge_options& o);

// Where judge_device_output judged a GPU's output, and the wall seconds of its steps (what a warm
// verdict costs, step by step: tests/bench/in_process_bench.py prints them).
struct device_judging {
  std::string judged_on;  // "device", or "host: " and why
  double references = 0;  // the references found where they are kept, or computed (then `computed` says how)
  judge::reference_seconds computed;
  double device_copy = 0;  // their device copy made (uploaded, the exact top-k sets prepared), where not kept
  // On the device: `compare` the device comparator (with the witness where the centre is it),
  // `determinism` the two launches compared there, `suspicion` the rest of the note: a CPU model's
  // witnessed rows copied to the host and counted there.
  judge::seconds device;
  double host = 0;  // where judged on the host: the outputs copied there and judged
};

// An output in a GPU's memory (a.device >= 0; `repeat`, where given, on the same device), judged
// without a copy of it: where the bundle's references are kept (o.references), the device
// comparator (validator/compare/device) sees nothing a finding is made of and the two launches
// agree bit for bit (compared on the device), by it, against the references' device copy kept
// beside them; otherwise (a finding, launches that differ, a paged bundle, relative columns,
// bfloat16 logits, references too large to keep, a device that fails, out of memory say) the
// outputs are copied to the host and judged by judge_output. The judgement is the same either way.
// A broken invariant on the device (std::logic_error: its references and the CPU's disagree, say)
// is thrown, not judged around. `report`, where given, receives where it was judged and what each
// step took once it is judged (a judgement that throws leaves it empty). The calling
// thread's current GPU is left as it was. A build without the GPU path refuses (input_error: move the tensors to the host).
compare::judgement judge_device_output(const bundle_under_check& b, const output_array& a,
                                       const output_array* repeat, const judge_options& o,
                                       device_judging* report = nullptr);

// The document `check --json` writes (schema "mqacheck.check"; reports/README.md).
nlohmann::json judgement_document(const bundle_under_check& b, const compare::judgement& j,
                                  const std::string& logits_shown);

}  // namespace mqa::api
