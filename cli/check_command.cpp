// `mqacheck check`: an output made by any program, judged against a bundle.
#include <fmt/core.h>

#include <memory>
#include <optional>
#include <vector>
#include <string>

#include "commands.hpp"
#include "contract_options.hpp"
#include "judging.hpp"
#include "reference_engine.hpp"
#include "reports/report.hpp"
#include "validator/activity.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/bundle/digest.hpp"
#include "validator/bundle/files.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/io/json_text.hpp"
#include "validator/io/output_path.hpp"
#include "validator/judge/bundle.hpp"
#include "validator/verdict/report_document.hpp"

namespace mqa::cli {
namespace {

struct check_options {
  std::string bundle_dir, logits, json, repeat;
  bool json_given = false;  // `--json ''` is an error, not "no JSON"
  bool recompute = false;     // ignore digest.json altogether
  bool trust_digest = false;  // take a reference.npy the digest proves as gen's (a bundle the user generated)
  contract_options declared;
  unsigned threads = 0;
  bool diagnose = true;
};

// What check reads: --json must be none of these.
std::vector<io::named_input> inputs_of(const check_options& o) {
  std::vector<io::named_input> inputs{{"--logits", o.logits}, {"--repeat", o.repeat}};
  const std::filesystem::path dir = o.bundle_dir;
  inputs.push_back({fmt::format("the bundle's {}", bundle::kCaseFile), dir / bundle::kCaseFile});
  inputs.push_back({fmt::format("the bundle's {}", bundle::kDigestFile), dir / bundle::kDigestFile});
  for (const auto& f : bundle::kArrayFiles) inputs.push_back({fmt::format("the bundle's {}", f.file), dir / f.file});
  return inputs;
}

int check_command(const check_options& o) {
  kernels::contract c = o.declared.contract();
  // Before any work: the JSON's path must take a file, and never one of the inputs.
  std::optional<io::output_file> json;
  if (o.json_given) json = io::resolve_output_file("--json", o.json, inputs_of(o));

  const activity::scope doing(fmt::format("check {}", o.bundle_dir));
  // The case and inputs only: reference.npy is read block by block (judge_in_blocks).
  const bundle::bundle_inputs b = bundle::load_bundle_inputs(
      o.bundle_dir, o.recompute      ? bundle::digest_use::ignore
                    : o.trust_digest ? bundle::digest_use::trust
                                     : bundle::digest_use::verify);
  const inputs::tensors& t = b.inputs;
  if (!o.declared.mask() && c.columns == kernels::columns_layout::absolute)
    c.mask = b.spec.clean_logits ? kernels::masking::clean : kernels::masking::dont_care;
  // A paged bundle is judged by its rows (p: no keys) and its cache (paged).
  const exact::problem p = inputs::problem_of(b.spec, t);
  std::optional<paged::problem> paged;
  if (t.paged) paged = inputs::paged_problem_of(b.spec, t);
  if (paged && (c.columns == kernels::columns_layout::relative || c.logits == bounds::logits_precision::bf16))
    throw input_error(fmt::format("{}: a paged bundle is judged with float32 absolute columns (accepted: --columns "
                                  "absolute and --logits-dtype fp32; bf16 logits and relative columns are the prefill kernel's)",
                                  o.bundle_dir));

  // The outputs as the contract declares them (float32 or bfloat16, absolute or relative columns),
  // each read once into the absolute image the comparator judges.
  judged_output logits = read_judged_output(o.logits, p, c);
  std::optional<judged_output> second;
  std::optional<kernels::output_view> repeat;
  if (!o.repeat.empty()) {
    const io::npy_header first = io::read_npy_header(o.logits), again = io::read_npy_header(o.repeat);
    if (again.typestring != first.typestring || again.shape != first.shape)
      throw input_error(fmt::format("{}: expected {} like {}, found {}", o.repeat, io::describe(first), o.logits,
                                    io::describe(again)));
    second.emplace(read_judged_output(o.repeat, p, c));
    repeat = second->view();
  }
  const compare::judgement j = judge::judge_in_blocks(b, p, paged ? &*paged : nullptr, c, logits.view(), repeat,
                                                      o.diagnose, o.threads, reference_engines());
  print_judgement(o.logits, j, b.spec.name, c);
  if (json) {
    nlohmann::json out = reports::judgement_json(j);
    out["schema"] = "mqacheck.check";
    out["schema_version"] = verdict::kSchemaVersion;
    out["bundle"] = o.bundle_dir;
    out["logits"] = o.logits;
    out["case"] = b.spec.name;
    out["contract"] = kernels::describe(c);
    reports::write_file(*json, io::json_text(out, 2) + "\n");
  }
  return j.pass() ? 0 : 1;
}

}  // namespace

void add_check_command(CLI::App& app) {
  {
    auto o = std::make_shared<check_options>();
    CLI::App* cmd = app.add_subcommand("check", "judge an output made by any program against a bundle");
    cmd->add_option("BUNDLE", o->bundle_dir, "bundle folder (mqacheck gen)")->required();
    cmd->add_option("--logits", o->logits,
                    "float32 [M, N] or [M, S], S >= N: the kernel's output (bfloat16 with --logits-dtype bf16)")
        ->required();
    o->declared.add_to(*cmd);
    cmd->add_option("--repeat", o->repeat, "the same kernel's output from a second launch: any bit difference is "
                                          "nondeterministic");
    CLI::Option* json = cmd->add_option("--json", o->json, "write the judgement as JSON (a new or regular file)");
    cmd->add_option("--threads", o->threads, "worker threads (default: all cores)");
    CLI::Option* trust = cmd->add_flag(
        "--trust-digest", o->trust_digest,
        "the bundle is one you generated yourself: take a reference.npy its digest.json proves as gen's instead of "
        "generating the inputs again and recomputing the reference (faster; an unkeyed digest catches accidents, "
        "not a forger)");
    cmd->add_flag("--recompute", o->recompute,
                  "ignore the bundle's digest.json altogether (a bundle whose digest.json was lost or damaged); the "
                  "inputs are generated again and the reference recomputed, as check does by default")
        ->excludes(trust);
    cmd->add_flag("--no-diagnosis{false}", o->diagnose,
                  "skip the diagnosis (findings otherwise name the planted bug mqacheck's model reproduces them with)");
    cmd->callback([o, json] {
      o->json_given = json->count() > 0;
      exit_status() = check_command(*o);
    });
  }
}

}  // namespace mqa::cli
